"""A family's `report` command: the shared entry point that reads a results folder and writes
the family's tables and figures."""

from masgrid._private.analysis.family_cli import report_main

__all__ = ["report_main"]
