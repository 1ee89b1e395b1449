"""Mean, sample SD and n over runs: the one helper behind every "mean with its spread" cell
of the MAS-Bench tables and figures, so that all of them compute the spread the same way
(sample SD with ddof = 1, NaN for a single run; runs without a value are not counted)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def mean_sd_n(runs: pd.DataFrame, keys: list[str], column: str, scale: float = 1.0,
              dropna_keys: bool = True) -> pd.DataFrame:
    """Indexed by `keys`: mean, sd (ddof = 1) and n of `column` times `scale` over runs."""
    grouped = runs[[*keys, column]].dropna(subset=[column]).groupby(keys, dropna=dropna_keys)[column]
    return pd.DataFrame({"mean": grouped.mean() * scale, "sd": grouped.std(ddof=1) * scale, "n": grouped.count()})


def mean_se(runs: pd.DataFrame, keys: list[str], column: str, scale: float = 1.0) -> pd.DataFrame:
    """Per cell of `keys` (as columns): mean, sd, n and the standard error sd / sqrt(n)."""
    out = mean_sd_n(runs, keys, column, scale)
    out["se"] = out["sd"] / np.sqrt(out["n"])
    return out.reset_index()


def spread_columns(runs: pd.DataFrame, keys: list[str], column: str, name: str, scale: float = 1.0,
                   with_n: bool = True) -> pd.DataFrame:
    """Table columns `name` (mean), `name sd` and, unless `with_n` is False (the table already
    counts the same runs), `name n`, indexed by `keys` (NaN keys kept as their own cell)."""
    stats = mean_sd_n(runs, keys, column, scale, dropna_keys=False)
    out = pd.DataFrame({name: stats["mean"], f"{name} sd": stats["sd"], f"{name} n": stats["n"]})
    return out if with_n else out.drop(columns=f"{name} n")
