"""CooperBench analysis: success by setting, the Solo-Coop gap, merge stages, conflicts, scaling.

Reads the `runs` columns the CooperBench task writes (docs/tasks/cooperbench-analysis.md):
`cooper_pool`, `cooper_task_id`, `cooper_features` ("1,2"), `cooper_setting` (coop | solo |
nocomm), `merge_stage`, `conflicts_naive`, `success`, ... Conventions, where the paper is silent:
- Every run is one Bernoulli trial (a task x model x setting x seed); a rate is k / n over the
  usable runs (analysis/usable_runs.py) of a cell, with a 95% Wilson interval (statsmodels). A run
  whose `success` is null (the evaluation did not finish) is not a trial: it is counted in
  `unscored` and left out of k and n.
- A cell that has no runs is a row with n = 0, NaN rate and `flag` saying what is missing,
  never a silently absent or NaN-only row.
- Differences of two rates (Solo - Coop, Coop - No-comm) carry Newcombe's hybrid-score 95%
  interval (statsmodels `confint_proportions_2indep(method="newcomb")`), treating the two
  settings as independent samples (the paper gives no test; pairing by task would need every
  task run in both settings).
Difficulty curves (appendix D/E) are in cooper_difficulty.py, communication in cooper_messages.py.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from masgrid.sdk.intervals import newcombe, wilson_rate
from masgrid.sdk.results import usable

SETTINGS = ("solo", "coop", "nocomm")
#: the merge stages in the order the evaluator tries them (appendix H); `failed`: no stage merged
MERGE_STAGES = ("naive", "union", "llm")
TASK_KEYS = ["cooper_pool", "cooper_task_id", "cooper_features"]
RATE_COLUMNS = ["n", "k", "rate", "ci_low", "ci_high"]


def cooper_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Usable CooperBench runs (task cooper/...), with `team` (agents in the team: the number of
    features for coop/nocomm, 1 for solo) and `n_features` added."""
    if runs.empty or "task" not in runs.columns:
        return runs.iloc[0:0]
    mine = runs[runs["task"].astype(str).str.startswith("cooper/")]
    mine = usable(mine) if not mine.empty else mine
    if mine.empty:
        return mine
    missing = [c for c in ("cooper_setting", "cooper_features", "success", "model") if c not in mine.columns]
    if missing:
        raise ValueError(f"CooperBench runs lack the columns {', '.join(missing)} (written by the cooper task)")
    n_features = mine["cooper_features"].astype(str).str.split(",").str.len()
    team = n_features.where(mine["cooper_setting"] != "solo", 1)
    return mine.assign(n_features=n_features, team=team)


def is_cooper(runs: pd.DataFrame) -> bool:
    """True when the results hold at least one CooperBench run (any status)."""
    return not runs.empty and "task" in runs.columns and runs["task"].astype(str).str.startswith("cooper/").any()


def _scored(frame: pd.DataFrame) -> pd.Series:
    return frame["success"].notna()


class RateRow(TypedDict):
    """A rate with its 95% Wilson interval over `n` runs, `k` of them successes (NaN x 3 for none)."""

    n: int
    k: int
    rate: float
    ci_low: float
    ci_high: float


def rate_row(frame: pd.DataFrame, column: str = "success") -> RateRow:
    """n, k, rate and Wilson interval of a boolean column over the rows where it is not null."""
    values = frame[column].dropna().astype(bool)
    rate, low, high = wilson_rate(int(values.sum()), len(values))
    return {"n": len(values), "k": int(values.sum()), "rate": rate, "ci_low": low, "ci_high": high}


def _flag(setting: str, n: int, unscored: int) -> str:
    parts = [f"no scored {setting} runs"] if n == 0 else []
    parts += [f"{unscored} unscored (evaluation did not finish)"] if unscored else []
    return "; ".join(parts)


def success_by_setting(runs: pd.DataFrame, features: int | None = 2) -> pd.DataFrame:
    """Figure 3 (left) / 4a: per model and setting, success rate with its 95% Wilson interval, and
    the mean share of features passed. Every model gets a row for Solo, Coop and every other
    setting any model has; a missing one says so in `flag`. `features`: features per task (2 = the
    paper's pairs; None: all)."""
    df = cooper_runs(runs)
    if not df.empty and features is not None:
        df = df[df["n_features"] == features]
    cols = ["model", "setting", *RATE_COLUMNS, "features_passed_share", "unscored", "flag"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    # Solo and Coop always (the paper's comparison), No-comm when any run has it
    settings = [s for s in SETTINGS if s != "nocomm" or (df["cooper_setting"] == s).any()]
    settings += sorted(set(df["cooper_setting"].astype(str)) - set(SETTINGS))
    rows = []
    for model in sorted(df["model"].astype(str).unique()):
        for setting in settings:
            cell = df[(df["model"].astype(str) == model) & (df["cooper_setting"] == setting)]
            row = rate_row(cell)
            share = np.nan
            if {"features_passed", "features_total"} <= set(cell.columns) and len(cell):
                tot = cell["features_total"].astype(float)
                share = float((cell["features_passed"].astype(float) / tot.where(tot > 0)).mean())
            unscored = int((~_scored(cell)).sum())
            rows.append({"model": model, "setting": setting, **row, "features_passed_share": share,
                         "unscored": unscored, "flag": _flag(setting, row["n"], unscored)})
    return pd.DataFrame(rows, columns=cols)


def gap(runs: pd.DataFrame, first: str = "solo", second: str = "coop", features: int | None = 2) -> pd.DataFrame:
    """Figure 3: per model, rate(first) - rate(second) with Newcombe's 95% interval, and the
    relative loss 1 - rate(second) / rate(first). Models missing a setting get NaN and a flag."""
    table = success_by_setting(runs, features)
    cols = ["model", f"n_{first}", f"rate_{first}", f"n_{second}", f"rate_{second}", "gap", "ci_low", "ci_high",
            "relative_loss", "flag"]
    rows = []
    for model, group in table.groupby("model", sort=True):
        by = group.set_index("setting")
        a = by.loc[first] if first in by.index else None
        b = by.loc[second] if second in by.index else None
        na, ka = (int(a["n"]), int(a["k"])) if a is not None else (0, 0)
        nb, kb = (int(b["n"]), int(b["k"])) if b is not None else (0, 0)
        diff, low, high = newcombe(ka, na, kb, nb)
        ra, rb = (ka / na if na else np.nan), (kb / nb if nb else np.nan)
        flags = [f"no scored {s} runs" for s, n in ((first, na), (second, nb)) if n == 0]
        rel = 1 - rb / ra if na and nb and ra > 0 else np.nan
        if na and nb and ra == 0:
            flags.append(f"{first} rate is 0: relative loss undefined")
        rows.append({"model": model, f"n_{first}": na, f"rate_{first}": ra, f"n_{second}": nb,
                     f"rate_{second}": rb, "gap": diff, "ci_low": low, "ci_high": high,
                     "relative_loss": rel, "flag": "; ".join(flags)})
    return pd.DataFrame(rows, columns=cols)


def merge_table(runs: pd.DataFrame, features: int | None = 2) -> pd.DataFrame:
    """Table 5: per model and setting (coop, nocomm), the % of runs that succeeded by the end of
    each merge stage (naive, then union, then the LLM resolver; cumulative, as the paper's
    columns), the gain of each stage, and the % that never merged. `llm_ran` says whether any
    run of the cell reached the resolver: without it the LLM column repeats Union (flagged)."""
    df = cooper_runs(runs)
    if not df.empty and features is not None:
        df = df[df["n_features"] == features]
    cols = ["model", "setting", "n", "naive%", "union%", "union_gain", "llm%", "llm_gain", "never_merged%",
            "llm_ran", "flag"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    df = df[df["cooper_setting"].isin(("coop", "nocomm")) & _scored(df)]
    rows = []
    for model in sorted(df["model"].astype(str).unique()):
        for setting in ("nocomm", "coop"):
            cell = df[(df["model"].astype(str) == model) & (df["cooper_setting"] == setting)]
            n = len(cell)
            stage = cell["merge_stage"].astype(str)
            ok = cell["success"].astype(bool)
            pct = [100.0 * float((ok & stage.isin(MERGE_STAGES[: i + 1])).sum()) / n if n else np.nan
                   for i in range(len(MERGE_STAGES))]
            # a run whose llm stage failed (resolver_outcome failed) keeps its union result: it did reach the resolver
            outcome = cell["resolver_outcome"] if "resolver_outcome" in cell.columns else pd.Series(dtype=object)
            llm_failed = int((outcome.astype(str) == "failed").sum())
            llm_ran = bool((stage == "llm").any()) or llm_failed > 0
            flags = [] if n else [f"no scored {setting} runs"]
            if n and not llm_ran:
                flags.append("no run reached the LLM resolver: llm% repeats union%")
            if llm_failed:
                flags.append(f"{llm_failed} run(s) whose llm stage failed (resolver_failure): counted at their union result")
            unknown = sorted(set(stage) - {*MERGE_STAGES, "failed"})
            if unknown:
                flags.append(f"unexpected merge_stage {', '.join(unknown)} (not counted as merged)")
            rows.append({"model": model, "setting": setting, "n": n, "naive%": pct[0], "union%": pct[1],
                         "union_gain": pct[1] - pct[0], "llm%": pct[2], "llm_gain": pct[2] - pct[1],
                         "never_merged%": 100.0 * float((stage == "failed").sum()) / n if n else np.nan,
                         "llm_ran": llm_ran, "flag": "; ".join(flags)})
    return pd.DataFrame(rows, columns=cols)


def comm_effect(merge: pd.DataFrame) -> pd.DataFrame:
    """Table 5's last column: final (LLM-stage) success % with communication minus without."""
    if merge.empty:
        return pd.DataFrame(columns=["model", "delta_llm%"])
    wide = merge.pivot(index="model", columns="setting", values="llm%")
    out = (wide.get("coop", np.nan) - wide.get("nocomm", np.nan)).rename("delta_llm%")
    return out.reset_index()


def conflict_rate(runs: pd.DataFrame, features: int | None = 2) -> pd.DataFrame:
    """Figure 4b: per model, the share of runs whose naive merge had at least one conflicting
    hunk, with communication (coop) and without (nocomm), Wilson intervals, the mean conflict
    count, and the difference (coop - nocomm) with Newcombe's interval. Runs without a recorded
    naive merge (`conflicts_naive` null) are counted in `unmerged`, not as conflict-free."""
    df = cooper_runs(runs)
    if not df.empty and features is not None:
        df = df[df["n_features"] == features]
    cols = ["model", "setting", *RATE_COLUMNS, "mean_conflicts", "unmerged", "flag"]
    if df.empty or "conflicts_naive" not in df.columns:
        return pd.DataFrame(columns=cols)
    rows = []
    for model in sorted(df["model"].astype(str).unique()):
        for setting in ("coop", "nocomm"):
            cell = df[(df["model"].astype(str) == model) & (df["cooper_setting"] == setting)]
            counts = pd.to_numeric(cell["conflicts_naive"], errors="coerce")
            has = counts.dropna() > 0
            rate, low, high = wilson_rate(int(has.sum()), len(has))
            unmerged = int(counts.isna().sum())
            flags = [f"no {setting} runs with a naive merge"] if not len(has) else []
            flags += [f"{unmerged} runs without a naive merge result"] if unmerged else []
            rows.append({"model": model, "setting": setting, "n": len(has), "k": int(has.sum()), "rate": rate,
                         "ci_low": low, "ci_high": high, "mean_conflicts": float(counts.mean()) if len(has) else np.nan,
                         "unmerged": unmerged, "flag": "; ".join(flags)})
    return pd.DataFrame(rows, columns=cols)


def conflict_difference(conflicts: pd.DataFrame) -> pd.DataFrame:
    """Per model: conflict rate with communication minus without, with Newcombe's interval."""
    rows = []
    for model, group in conflicts.groupby("model", sort=True):
        by = group.set_index("setting")
        kc, nc = (int(by.loc["coop", "k"]), int(by.loc["coop", "n"])) if "coop" in by.index else (0, 0)
        kn, nn = (int(by.loc["nocomm", "k"]), int(by.loc["nocomm", "n"])) if "nocomm" in by.index else (0, 0)
        diff, low, high = newcombe(kc, nc, kn, nn)
        flag = "" if nc and nn else "needs both coop and nocomm runs"
        rows.append({"model": model, "difference": diff, "ci_low": low, "ci_high": high, "flag": flag})
    return pd.DataFrame(rows, columns=["model", "difference", "ci_low", "ci_high", "flag"])


def scaling(runs: pd.DataFrame) -> pd.DataFrame:
    """Appendix F: coop success rate per model and team size (2, 3, 4 agents: one per feature)
    with Wilson intervals, and the task pools each size was measured on (sizes measured on
    different pools are not strictly comparable; the `pools` column shows it)."""
    df = cooper_runs(runs)
    cols = ["model", "agents", *RATE_COLUMNS, "tasks", "pools", "flag"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    df = df[df["cooper_setting"] == "coop"]
    rows = []
    sizes = sorted(int(s) for s in df["team"].unique())
    for model in sorted(df["model"].astype(str).unique()):
        for size in sizes:
            cell = df[(df["model"].astype(str) == model) & (df["team"] == size)]
            row = rate_row(cell)
            tasks = cell[TASK_KEYS].drop_duplicates() if set(TASK_KEYS) <= set(cell.columns) else cell.iloc[0:0]
            pools = ",".join(sorted(cell["cooper_pool"].astype(str).unique())) if "cooper_pool" in cell else ""
            rows.append({"model": model, "agents": size, **row, "tasks": len(tasks), "pools": pools,
                         "flag": "" if row["n"] else f"no scored coop runs with {size} agents"})
    return pd.DataFrame(rows, columns=cols)
