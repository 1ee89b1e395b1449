"""Relay: a toy benchmark family installed from outside masgrid."""
