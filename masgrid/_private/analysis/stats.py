"""Welch's t-tests (unequal variances) over per-run metrics, as in MAS-Bench G.2 and G.4.

One test per cell of `by` and per pair of groups of `between`; each run is one sample. A
pair where either side has fewer than two runs, or both sides have zero variance, gets a
NaN statistic and p-value rather than an error (deterministic scripted runs do that).
`diff` and `t` have the same sign: group_b minus group_a (the condition or protocol compared
with the reference), so a positive t means group_b is higher.

Every table of tests is one family for multiple comparisons: `p_holm` is Holm's step-down
adjustment over all its defined p-values (controls the family-wise error rate without
assuming independence); `p` stays the uncorrected value, shown next to it.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from masgrid._private.analysis.usable_runs import usable as completed

WELCH_COLUMNS = ["metric", "group_a", "group_b", "n_a", "n_b", "mean_a", "mean_b", "sd_a", "sd_b", "diff", "t", "p",
                 "p_holm"]


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the input order; NaN (undefined tests) stay NaN and do not
    count towards the number of tests."""
    values = np.asarray(p, dtype=float)
    out = np.full(values.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(values))
    m = len(defined)
    if not m:
        return out
    order = defined[np.argsort(values[defined], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * values[i]))
        out[i] = running
    return out


def welch(a_values: Sequence[float] | np.ndarray, b_values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Two-sided Welch's t statistic and p-value (NaN when undefined)."""
    a = np.asarray(a_values, dtype=float)
    b = np.asarray(b_values, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) < 2 or len(b) < 2 or (a.var() == 0 and b.var() == 0):
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_ind(a, b, equal_var=False)
    return float(res.statistic), float(res.pvalue)


def welch_tests(runs: pd.DataFrame, metric: str = "sr", between: str = "condition",
                by: Sequence[str] = ("model", "protocol"), reference: str | None = "base") -> pd.DataFrame:
    """Compare groups of `between` within each cell of `by`.

    With `reference`, every other group is tested against it (G.4: Base vs each CAMOC
    variant); with `reference=None`, every pair is tested (G.2: between backends).
    """
    ok = completed(runs)
    rows = []
    cells = ok.groupby(list(by), dropna=False) if by else [((), ok)]
    for cell, frame in cells:
        cell = cell if isinstance(cell, tuple) else (cell,)
        # runs without a value (e.g. phase tokens of older two-phase records) are not samples
        groups = {g: f[metric].dropna().to_numpy(dtype=float) for g, f in frame.groupby(between)}
        names = sorted(groups, key=str)
        if reference is not None:
            pairs = [(reference, g) for g in names if g != reference and reference in groups]
        else:
            pairs = list(itertools.combinations(names, 2))
        for ga, gb in pairs:
            a, b = groups[ga], groups[gb]
            t, p = welch(b, a)  # t and diff both read group_b - group_a (positive: b higher)
            rows.append({**dict(zip(by, cell)), "metric": metric, "group_a": ga, "group_b": gb,
                         "n_a": len(a), "n_b": len(b), "mean_a": float(np.nanmean(a)),
                         "mean_b": float(np.nanmean(b)), "sd_a": _sd(a), "sd_b": _sd(b),
                         "diff": float(np.nanmean(b) - np.nanmean(a)), "t": t, "p": p})
    out = pd.DataFrame(rows, columns=[c for c in [*by, *WELCH_COLUMNS] if c != "p_holm"])
    out["p_holm"] = holm(out["p"]) if not out.empty else pd.Series(dtype=float)
    return out


def _sd(values: np.ndarray) -> float:
    """Sample standard deviation (ddof 1), NaN below two values."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
