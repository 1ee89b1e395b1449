"""Mean, sample SD and n over runs: the one helper behind every "mean with its spread" cell
of the MAS-Bench tables and figures, so that all of them compute the spread the same way
(sample SD with ddof = 1, NaN for a single run; runs without a value are not counted).
`wilson` is the one interval of a success rate that the core report sections and the
adaptive stopping rule share."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (statsmodels' proportion_confint), so every table
    and stopping decision uses the same bounds; (NaN, NaN) for no runs."""
    if n == 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(int(successes), int(n), alpha=1 - confidence, method="wilson")
    rate = successes / n  # the interval contains it; rounding can leave 5e-17 above 0 at k = 0
    return min(float(low), rate), max(float(high), rate)


def wilson_rate(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """The rate with its Wilson interval, (rate, low, high); NaN x 3 for no runs."""
    if n <= 0:
        return math.nan, math.nan, math.nan
    low, high = wilson(successes, n, confidence)
    return successes / n, low, high


def newcombe(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """p1 - p2 and its Newcombe (hybrid Wilson score) interval (statsmodels); NaN x 3 if either
    n is 0."""
    if n1 <= 0 or n2 <= 0:
        return math.nan, math.nan, math.nan
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = confint_proportions_2indep(int(k1), int(n1), int(k2), int(n2), method="newcomb", compare="diff",
                                           alpha=1 - confidence)
    return k1 / n1 - k2 / n2, float(low), float(high)


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
