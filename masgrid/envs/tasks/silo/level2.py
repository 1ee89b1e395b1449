"""SILO-Bench Level II (mesh) task specs: placeholder, written on branch silo-l2."""
