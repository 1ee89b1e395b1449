"""MAS-Bench distributed sorting, max and prefix sum, with CAMOC (mas-bench paper)."""
