"""MAS-Bench tables (paper section 5 and appendix G) from the `runs` table.

Conventions, where the paper leaves room (docs/analysis.md repeats them):
- Only usable runs enter a table (analysis/usable_runs.py): status ok or degraded. An invalid
  run (too many failed model calls) or a failed one measured the infrastructure, not the
  model; they are counted in `masgrid report`'s overview and its exclusion note instead.
- A cell is the mean over its runs of the per-run metric: SR% = 100 * mean(sr) with sr the
  per-agent fraction of eq. 4 (an instance's success is sr == 1); R = mean(rounds);
  TE = mean(te); CR% = 100 * mean(cr). Axes not named by a table are averaged over,
  except the model: every table has the served model (`model`) as its first row key, so
  two models are never averaged into one number.
- Tables 2, 3, 8 and Figure 2 describe one condition (`condition`, Base unless asked;
  None pools all conditions, which the paper never does): CAMOC and its ablations change
  SR and cost, so a mean over conditions would describe no protocol anyone ran.
- Where the paper's table means whole-instance success (Tables 9-11: "success rate" of a
  task or condition), `success%` (share of instances with SR = 1) stands next to SR%.
- Two-phase conditions (abl_message, camoc): R, TE, CR and tokens are those of the scored
  phase (phase 2), as in the paper's Table 1; `accounting="run"` sums both phases,
  "phase1"/"phase2" pick one (families/masbench/phases.py says why).
- Table 6 reports mean total tokens per run (Base and both ablations pooled vs CAMOC);
  Table 7 divides all tokens spent by the number of successful instances.
- Spread (not in the paper, which prints bare means): every cell that is a mean over runs
  (Tables 2, 3, 6, 8, 9, 10, Figure 2's data) is followed by `<cell> sd`, the sample SD over
  those runs (ddof = 1, in the cell's unit; NaN for one run), and by the runs it averages:
  `<cell> n`, or the table's `runs` column where all its means share the same runs. success%
  is a mean of 0/1 outcomes, so its SD is that of the per-run outcome (x 100). Table 7 is a
  ratio of sums, not a mean over runs, and has no SD.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from masgrid.families.masbench.phases import DEFAULT, by_phase
from masgrid.sdk.intervals import spread_columns
from masgrid.sdk.results import usable

PROTOCOLS = ("broadcast", "p2p", "kv")
CONDITIONS = ("base", "camoc", "abl_submit", "abl_message")
MODES = ("asc", "near_asc", "random", "near_desc", "desc")
#: (column in the tables, source column in runs, scale)
METRICS: tuple[tuple[str, str, float], ...] = (("SR%", "sr", 100.0), ("R", "rounds", 1.0),
                                               ("TE", "te", 1.0), ("CR%", "cr", 100.0))


def completed(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs whose metrics the tables use (status ok or degraded; see analysis/usable_runs.py)."""
    return usable(runs)


def _order(values: Sequence[object], preferred: Sequence[object]) -> list[object]:
    present = list(dict.fromkeys(values))
    return [v for v in preferred if v in present] + sorted((v for v in present if v not in preferred), key=str)


def _ordered_pairs(index: pd.Index, preferred: Sequence[object]) -> pd.MultiIndex:
    """(model, value) rows: models sorted, values in the preferred order within each model."""
    if not isinstance(index, pd.MultiIndex) or index.empty:
        return index
    models = sorted(set(index.get_level_values(0)), key=str)
    values = _order(index.get_level_values(1), preferred)
    rows = [(m, v) for m in models for v in values if (m, v) in index]
    return pd.MultiIndex.from_tuples(rows, names=index.names)


def for_task(runs: pd.DataFrame, task: str | None, condition: str | None = None,
             accounting: str = DEFAULT) -> pd.DataFrame:
    """Ok runs of one task (None: all tasks) and, when given, one condition, with metrics
    under `accounting` (default: the scored phase, families/masbench/phases.py). Tables 1-8 describe
    sorting unless told otherwise."""
    ok = completed(runs)
    ok = ok if task is None or ok.empty else ok[ok["task"] == task]
    ok = ok if condition is None or ok.empty else ok[ok["condition"] == condition]
    return by_phase(ok, accounting)


def with_success(ok: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """SR% (mean per-agent SR), success% (share of instances with SR = 1), each followed by its
    sample SD over runs, and runs per cell."""
    frame = ok.assign(success_=ok["success"].fillna(False).astype(bool).astype(float))
    out = pd.concat([spread_columns(frame, keys, "sr", "SR%", 100.0, with_n=False),
                     spread_columns(frame, keys, "success_", "success%", 100.0, with_n=False)], axis=1)
    out["runs"] = frame.groupby(keys)["run_id"].count()
    return out


def _metric_frame(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell: each metric's mean, sd and n (runs with a value), then all runs of the cell."""
    ok = completed(runs)
    agg = pd.concat([spread_columns(ok, keys, col, name, scale) for name, col, scale in METRICS], axis=1)
    agg["runs"] = ok.groupby(keys, dropna=False)["run_id"].count()
    return agg


def table1(runs: pd.DataFrame, task: str | None = "sorting", accounting: str = DEFAULT) -> pd.DataFrame:
    """Table 1: rows (model, condition), columns (protocol, SR% | R | TE | CR%); two-phase rows
    under `accounting` (default: the scored phase, as the paper)."""
    runs = for_task(runs, task, accounting=accounting)
    agg = _metric_frame(runs, ["model", "condition", "protocol"])
    wide = agg[[m for m, _, _ in METRICS]].unstack("protocol")
    wide = wide.swaplevel(0, 1, axis=1)
    protocols = _order(wide.columns.get_level_values(0), PROTOCOLS)
    wide = wide.reindex(columns=pd.MultiIndex.from_product([protocols, [m for m, _, _ in METRICS]]))
    conditions = _order(wide.index.get_level_values("condition"), CONDITIONS)
    models = sorted(set(wide.index.get_level_values("model")), key=str)
    rows = [(m, c) for m in models for c in conditions if (m, c) in wide.index]
    return wide.reindex(pd.MultiIndex.from_tuples(rows, names=["model", "condition"]))


def table2(runs: pd.DataFrame, task: str | None = "sorting", condition: str | None = "base") -> pd.DataFrame:
    """Table 2: SR% by model and N (rows) and (protocol, K, SR% | SR% sd | SR% n) (columns) in
    one condition, averaged over input families."""
    runs = for_task(runs, task, condition)
    ok = completed(runs)
    stats = spread_columns(ok, ["model", "agents", "protocol", "k"], "sr", "SR%", 100.0)
    sr = stats.unstack(["protocol", "k"]).reorder_levels([1, 2, 0], axis=1)
    protocols = _order(sr.columns.get_level_values(0), PROTOCOLS)
    ks = sorted(set(sr.columns.get_level_values(1)))
    cols = [(p, k, s) for p in protocols for k in ks for s in stats.columns if (p, k, s) in sr.columns]
    sr = sr.reindex(columns=pd.MultiIndex.from_tuples(cols, names=["protocol", "k", None])).sort_index()
    sr.index.names = ["model", "N"]
    return sr


def table3(runs: pd.DataFrame, task: str | None = "sorting", condition: str | None = "base") -> pd.DataFrame:
    """Table 3: per model, by input family (ordered by disorder), in one condition: SR%, R,
    TE, CR% and the mean inversion rate."""
    runs = for_task(runs, task, condition)
    agg = _metric_frame(runs, ["model", "mode"])
    ok = completed(runs)
    if "rho" in ok.columns:
        agg = pd.concat([spread_columns(ok, ["model", "mode"], "rho", "rho", with_n=False), agg], axis=1)
    return agg.reindex(_ordered_pairs(agg.index, MODES))


def scaling(runs: pd.DataFrame, task: str | None = "sorting", condition: str | None = "base") -> pd.DataFrame:
    """Figure 2's data: SR%, R, TE, CR% by (model, N) in one condition, averaged over K,
    mode and protocol."""
    runs = for_task(runs, task, condition)
    return _metric_frame(runs, ["model", "agents"])


def table6(runs: pd.DataFrame, task: str | None = "sorting", accounting: str = DEFAULT) -> pd.DataFrame:
    """Table 6: mean total tokens per run by protocol, Base and ablations pooled vs CAMOC
    (`accounting="run"`: both phases of two-phase runs, the tokens spent)."""
    runs = for_task(runs, task, accounting=accounting)
    ok = completed(runs)
    ok = ok[ok["condition"].isin(CONDITIONS)]
    is_camoc = ok["condition"] == "camoc"
    keys = ["model", "protocol"]
    out = pd.concat([spread_columns(ok[~is_camoc], keys, "tokens_total", "base_abl_tokens"),
                     spread_columns(ok[is_camoc], keys, "tokens_total", "camoc_tokens")], axis=1)
    out = out.rename(columns={"base_abl_tokens n": "base_abl_runs", "camoc_tokens n": "camoc_runs"})
    out["delta_pct"] = (out["camoc_tokens"] / out["base_abl_tokens"] - 1) * 100
    out = out.reindex(_ordered_pairs(out.index, ("kv", "p2p", "broadcast")))
    out.index.names = keys
    return out


def tokens_per_correct(runs: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Sum of tokens over all ok runs / number of successful instances (NaN if none succeeded)."""
    ok = completed(runs)
    g = ok.groupby(keys)
    succ = g["success"].apply(lambda s: int(s.fillna(False).astype(bool).sum()))
    return g["tokens_total"].sum() / succ.replace(0, np.nan)


def table7(runs: pd.DataFrame, protocol: str = "kv", task: str | None = "sorting",
           accounting: str = DEFAULT) -> pd.DataFrame:
    """Table 7: tokens per correct instance on one protocol (Shared K-V), Base vs CAMOC, per model
    (`accounting="run"`: both phases of two-phase runs, the tokens spent); change_pct is CAMOC's
    change against Base in percent, negative when CAMOC needs fewer tokens."""
    runs = for_task(runs, task, accounting=accounting)
    ok = completed(runs)
    ok = ok[(ok["protocol"] == protocol) & ok["condition"].isin(["base", "camoc"])]
    per = tokens_per_correct(ok, ["model", "condition"]).unstack("condition")
    per = per.reindex(columns=["base", "camoc"])
    # The paper's "Reduction" column prints this signed change (-54%: fewer tokens per correct
    # instance); named change_pct so that a CAMOC increase (positive) never reads as a reduction.
    per["change_pct"] = (per["camoc"] / per["base"] - 1) * 100
    per.columns.name = None
    return per


def table8(runs: pd.DataFrame, task: str | None = "sorting", condition: str | None = "base") -> pd.DataFrame:
    """Table 8: mean tokens per run at N=1 by protocol in one condition (interface friction
    without coordination)."""
    runs = for_task(runs, task, condition)
    ok = completed(runs)
    ok = ok[ok["agents"] == 1]
    out = spread_columns(ok, ["model", "protocol"], "tokens_total", "tokens_per_run").rename(
        columns={"tokens_per_run n": "runs"})
    return out.reindex(_ordered_pairs(out.index, ("kv", "p2p", "broadcast")))


def table9(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 9: Base success by task (rows) and model (columns): SR%, success%, their SDs, runs."""
    ok = completed(runs)
    ok = ok[ok["condition"] == "base"]
    cells = with_success(ok, ["task", "model"])
    out = cells.unstack("model").swaplevel(0, 1, axis=1)
    models = sorted(set(out.columns.get_level_values(0)), key=str)
    out = out.reindex(columns=pd.MultiIndex.from_product([models, list(cells.columns)]))
    return out.reindex(_order(out.index, ("max", "prefix_sum", "sorting")))


def table10(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 10: SR% and success% (each with its SD) and runs by model and condition (rows) and
    task (columns), averaged over the rest."""
    ok = completed(runs)
    cells = with_success(ok, ["model", "condition", "task"])
    out = cells.unstack("task").swaplevel(0, 1, axis=1)
    tasks = _order(out.columns.get_level_values(0), ("max", "prefix_sum", "sorting"))
    out = out.reindex(columns=pd.MultiIndex.from_product([tasks, list(cells.columns)]))
    return out.reindex(_ordered_pairs(out.index, ("base", "abl_message", "abl_submit", "camoc")))
