"""Helpers shared by the SILO-Bench analyses: which runs are SILO runs, their level."""

from __future__ import annotations

import re

import pandas as pd

from masgrid.sdk.results import usable

_TASK = re.compile(r"^silo/(I{1,3})-\d+$")
LEVELS = {"I": 1, "II": 2, "III": 3}


def level_of(task: str) -> int | None:
    """1, 2 or 3 for `silo/<roman>-<nn>`, None for other tasks."""
    match = _TASK.match(str(task))
    return LEVELS[match.group(1)] if match else None


def oracle_scale(condition: object) -> int | None:
    match = re.match(r"^oracle-(\d+)$", str(condition))
    return int(match.group(1)) if match else None


def silo_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Usable SILO runs (analysis/usable_runs.py) with `level` and `oracle_n` (N of an oracle-<N> baseline, else NaN)."""
    if runs.empty:
        return runs.assign(level=pd.Series(dtype="Int64"), oracle_n=pd.Series(dtype="Int64"))
    out = runs[runs["task"].map(level_of).notna()].copy()
    out = usable(out)
    out["level"] = out["task"].map(level_of).astype("Int64")
    out["oracle_n"] = out["condition"].map(oracle_scale).astype("Int64")
    return out
