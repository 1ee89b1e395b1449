"""`masgrid report A B`: two experiments side by side, cell by cell, with the difference and
its significance.

A and B are two results directories, or two `experiment` names inside one. For each family
present in both, runs are grouped into cells by the keys that define a setting (model, task,
protocol, N, condition, ...) and each of the family's per-run metrics is compared where both
sides have runs: n, mean and sample SD per side, diff = mean_B - mean_A, Welch's t-test (two
sided; NaN below two runs per side or with zero variance on both) with `p` uncorrected and
`p_holm` Holm-adjusted over every test of the comparison (one family of tests). Only usable
runs count (status ok or degraded; analysis/usable_runs.py). Cells that only one side has are
listed by count, not compared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from masgrid._private.analysis.families import family_name
from masgrid.family import families
from masgrid._private.analysis.load import read_table
from masgrid._private.analysis.stats import holm, welch
from masgrid._private.analysis.usable_runs import usable

COLUMNS = ["n_a", "mean_a", "sd_a", "n_b", "mean_b", "sd_b", "diff", "t", "p", "p_holm"]


def select(source: str, results: Path | None = None) -> tuple[pd.DataFrame, str]:
    """The runs of one side and its label: a results directory, or an experiment name in `results`."""
    path = Path(source)
    if path.is_dir():
        runs = read_table(path, "runs")
        if runs.empty:
            raise ValueError(f"no runs recorded under {path}")
        return runs, str(path)
    if results is None or not results.is_dir():
        raise ValueError(f"{source!r} is neither a results directory nor an experiment (no results directory "
                         f"{results} to look it up in)")
    runs = read_table(results, "runs")
    mine = runs[runs["experiment"] == source] if not runs.empty else runs
    if mine.empty:
        known = sorted(runs["experiment"].dropna().unique()) if not runs.empty else []
        raise ValueError(f"no experiment {source!r} in {results} (experiments: {', '.join(known) or 'none'})")
    return mine, f"{source} ({results})"


def _values(frame: pd.DataFrame, metric: str) -> np.ndarray:
    return frame[metric].dropna().astype(float).to_numpy()


def compare(runs_a: pd.DataFrame, runs_b: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(one row per family x cell x metric, notes on cells only one side has)."""
    a, b = usable(runs_a), usable(runs_b)
    rows, notes = [], []
    fam_a = a["task"].astype(str).map(family_name) if not a.empty else pd.Series(dtype=object)
    fam_b = b["task"].astype(str).map(family_name) if not b.empty else pd.Series(dtype=object)
    for family, spec in families().items():
        if spec.compare is None:
            continue
        keys, metrics = list(spec.compare[0]), list(spec.compare[1])
        side_a, side_b = a[fam_a == family], b[fam_b == family]
        if side_a.empty and side_b.empty:
            continue
        keys = [k for k in keys if k in side_a.columns and k in side_b.columns]
        cells_a = dict(iter(side_a.groupby(keys, dropna=False))) if not side_a.empty else {}
        cells_b = dict(iter(side_b.groupby(keys, dropna=False))) if not side_b.empty else {}
        only = len(set(cells_a) ^ set(cells_b))
        if only:
            notes.append(f"{spec.label}: {len(set(cells_a) - set(cells_b))} cells only in A, "
                         f"{len(set(cells_b) - set(cells_a))} only in B (not compared)")
        for cell in sorted(set(cells_a) & set(cells_b), key=str):
            for metric in metrics:
                if metric not in side_a.columns or metric not in side_b.columns:
                    continue
                va, vb = _values(cells_a[cell], metric), _values(cells_b[cell], metric)
                if not len(va) or not len(vb):
                    continue
                t, p = welch(vb, va)
                rows.append({"family": spec.label, **dict(zip(keys, cell)), "metric": metric,
                             "n_a": len(va), "mean_a": va.mean(), "sd_a": va.std(ddof=1) if len(va) > 1 else np.nan,
                             "n_b": len(vb), "mean_b": vb.mean(), "sd_b": vb.std(ddof=1) if len(vb) > 1 else np.nan,
                             "diff": vb.mean() - va.mean(), "t": t, "p": p})
    out = pd.DataFrame(rows)
    if not out.empty:
        out["p_holm"] = holm(out["p"])
    return out, notes


def write_comparison(a: str, b: str, out: Path, results: Path | None = None) -> list[Path]:
    """compare.md and compare.csv in `out`; ValueError on a side that has no runs."""
    from masgrid._private.analysis.markdown import write_table

    runs_a, label_a = select(a, results)
    runs_b, label_b = select(b, results)
    table, notes = compare(runs_a, runs_b)
    if table.empty:
        raise ValueError(f"nothing to compare: {label_a} and {label_b} share no setting with usable runs")
    note = (f"A = {label_a}, B = {label_b}. diff = mean_B - mean_A over usable runs (ok, degraded); Welch's t-test, "
            f"p uncorrected, p_holm Holm-adjusted over all {int(table['p'].notna().sum())} defined tests. "
            + " ".join(n + "." for n in notes))
    return write_table(table.set_index("family"), out, "compare", "A against B: per setting and metric", note)
