"""What the rerun changed: phase 2 of `abl_message` and `camoc` against phase 1, per answer.

One-shot Commitment (paper section 4.4, appendix F.6) asks each agent to check its phase-1
submission and resubmit it unchanged if right, corrected if not. This table counts, for
every agent of every usable two-phase run, what the rerun did to its answer:

- `fixed`: wrong or missing after phase 1, correct after phase 2;
- `broken`: correct after phase 1, wrong or missing after phase 2;
- `kept_correct`, `kept_wrong`: the same verdict in both phases (`kept_wrong` includes an
  answer changed to another wrong one);
- `same_answer`: agents that submitted in both phases and resubmitted exactly the phase-1 answer;
- `unscored`: agents of runs recorded before `correct_phase1` existed (not classified).

Per run: `runs_fixed` / `runs_broken` count instances whose success (SR = 1) the rerun
gained or lost; `SR%_phase1` and `SR%_phase2` are the mean SR of the two phases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from masgrid.families.masbench.phases import two_phase

OUTCOMES = ("fixed", "broken", "kept_correct", "kept_wrong")
KEYS = ["model", "condition", "protocol"]


def answer_changes(agents: pd.DataFrame) -> pd.DataFrame:
    """`agents` rows with `change` (one of OUTCOMES, or None when unscored) and `same_answer`."""
    out = agents.copy()
    before = out["correct_phase1"] if "correct_phase1" in out.columns else pd.Series(None, index=out.index,
                                                                                       dtype=object)
    after = out["correct"].fillna(False).astype(bool)
    scored = before.notna()
    was = before.where(scored, False).astype(bool)
    change = np.select([was & after, ~was & after, was & ~after], ["kept_correct", "fixed", "broken"], "kept_wrong")
    out["change"] = pd.Series(change, index=out.index).where(scored, None)
    first, final = out["submitted_phase1"], out["submission"]
    out["same_answer"] = first.notna() & final.notna() & (first == final)
    return out


def rerun_changes(runs: pd.DataFrame, agents: pd.DataFrame) -> pd.DataFrame:
    """Counts of OUTCOMES (and same_answer, unscored) per (model, condition, protocol) over
    the two-phase runs in `runs` (the caller picks the usable runs of one task)."""
    runs = runs[two_phase(runs)] if not runs.empty else runs
    if runs.empty or agents.empty:
        return pd.DataFrame()
    mine = agents[agents["run_id"].isin(runs["run_id"])]
    mine = mine.drop(columns=[k for k in KEYS if k in mine.columns])  # the runs table's keys are the ones used
    changes = answer_changes(mine).merge(runs[["run_id", *KEYS]], on="run_id", how="inner")
    counts = pd.crosstab([changes[k] for k in KEYS], changes["change"]).reindex(columns=list(OUTCOMES), fill_value=0)
    counts.columns.name = None
    table = pd.DataFrame(index=runs.groupby(KEYS, dropna=False).size().index)
    table["runs"] = runs.groupby(KEYS, dropna=False)["run_id"].count()
    table["agents"] = changes.groupby(KEYS, dropna=False)["run_id"].count()
    table = table.join(counts)
    table["same_answer"] = changes.groupby(KEYS, dropna=False)["same_answer"].sum()
    table["unscored"] = changes.groupby(KEYS, dropna=False)["change"].apply(lambda s: int(s.isna().sum()))
    success_1 = runs["success_phase1"] if "success_phase1" in runs.columns else pd.Series(np.nan, index=runs.index)
    known = success_1.notna()
    was_ok = success_1.where(known, False).astype(bool)
    now_ok = runs["success"].fillna(False).astype(bool)
    flags = runs[KEYS].assign(runs_fixed=known & ~was_ok & now_ok, runs_broken=known & was_ok & ~now_ok)
    table = table.join(flags.groupby(KEYS, dropna=False)[["runs_fixed", "runs_broken"]].sum())
    sr_1 = runs["sr_phase1"] if "sr_phase1" in runs.columns else pd.Series(np.nan, index=runs.index)
    table["SR%_phase1"] = runs.assign(v=sr_1).groupby(KEYS, dropna=False)["v"].mean() * 100
    table["SR%_phase2"] = runs.groupby(KEYS, dropna=False)["sr"].mean() * 100
    counted = [*OUTCOMES, "agents", "same_answer", "unscored", "runs_fixed", "runs_broken"]
    table[counted] = table[counted].fillna(0).astype(int)
    return table.sort_index()
