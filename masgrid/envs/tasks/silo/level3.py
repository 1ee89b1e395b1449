"""SILO-Bench Level III (global shuffle) task specs: placeholder, written on branch silo-l3."""
