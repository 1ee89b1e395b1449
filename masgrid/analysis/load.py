"""Load a results directory into pandas DataFrames."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

TABLES = ("runs", "agents", "events")


@dataclass
class Results:
    runs: pd.DataFrame
    agents: pd.DataFrame
    events: pd.DataFrame


def read_table(results_dir: str | Path, table: str) -> pd.DataFrame:
    """One table with partition columns as plain strings (not categoricals)."""
    path = Path(results_dir) / table
    if not path.is_dir() or not any(path.rglob("part-*.parquet")):
        return pd.DataFrame()
    df = pd.read_parquet(path)
    for key in ("task", "protocol"):
        if key in df.columns:
            df[key] = df[key].astype(str)
    return df


def load_results(results_dir: str | Path, completed_only: bool = True) -> Results:
    """runs/agents/events; with `completed_only`, rows of runs without a `runs` row are dropped
    (left by an interrupted attempt that a resume will redo)."""
    runs = read_table(results_dir, "runs")
    agents = read_table(results_dir, "agents")
    events = read_table(results_dir, "events")
    if completed_only and not runs.empty:
        done = set(runs["run_id"])
        agents = agents[agents["run_id"].isin(done)] if not agents.empty else agents
        events = events[events["run_id"].isin(done)] if not events.empty else events
    return Results(runs=runs, agents=agents, events=events)
