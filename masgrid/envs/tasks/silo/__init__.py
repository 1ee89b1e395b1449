"""SILO-Bench (30 tasks in three levels). Specs register in level modules."""
