"""Sweeps: planning a grid, resuming it, and executing its runs on Ray (ray_runs, sweep_execution),
with admission, budgets, adaptive stopping, warm processes and model phases."""
