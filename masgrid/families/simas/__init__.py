"""SIMAS: sequential group discussion on question answering (simas paper)."""
