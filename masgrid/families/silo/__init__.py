"""SILO-Bench: 30 tasks in three levels over siloed data (silo paper)."""
