"""Which phase's accounting a MAS-Bench table reports, and the per-phase breakdown.

A two-phase condition (`abl_message`, `camoc`) runs the task twice; each run records its
metrics for phase 1, phase 2 and the whole run (docs/results.md: `<metric>_phase1`,
`<metric>_phase2`; the unsuffixed token and round columns add both phases up).

The paper's Table 1 reads as one phase's accounting, so the tables' default (`final`) is the
phase whose submissions are scored:
SR is taken on the final submissions (Algorithm 3: phase 2's when twoPhase), the round
counter restarts at phase 2 (Algorithm 3, line 16), and Table 1's numbers are on one
phase's scale: CAMOC's R and TE stay within 0.69-1.27 times Abl. submit's (the one-phase
condition with the same prompts) in every cell, where summing both phases would double R
and halve TE; Table 6 finds CAMOC within +-6% of
Base/ablation tokens, not the about +50% a whole-run sum would give.
docs/tasks/masbench.md ("Per-phase metrics") gives the full argument.

Accountings (`by_phase`):
- `final`: the phase whose submissions are scored: phase 2 of a two-phase run, else the run;
- `run`: the whole run (both phases summed; SR of the final submissions);
- `phase1`, `phase2`: one phase (one-phase runs have no phase 2: NaN).
A two-phase run recorded before the per-phase columns existed has no per-phase tokens (only
`rounds_phase1`/`rounds_phase2`): under `final`, `phase1` and `phase2` its TE, CR and token
counts are NaN, so it drops out of those means instead of entering with both phases summed
(`missing_phase_columns` counts such runs); its SR and success, scored on the final
submissions, are known and kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from masgrid.sdk.intervals import spread_columns

ACCOUNTINGS = ("final", "run", "phase1", "phase2")
#: the tables' default: the accounting of the paper's Table 1 (module docstring)
DEFAULT = "final"
#: metrics recorded for phase 1, phase 2 and the whole run
PHASED = ("success", "sr", "check", "submitted", "rounds", "te", "cr", "tokens_in", "tokens_out", "tokens_total",
          "tokens_comm")
#: scores of the final submissions: the unsuffixed column is already the last phase's value
SCORED = ("success", "sr", "check", "submitted")


def two_phase(runs: pd.DataFrame) -> pd.Series:
    """True for runs that had a phase 2 (the rerun of abl_message or camoc)."""
    if "rounds_phase2" not in runs.columns:
        return pd.Series(False, index=runs.index)
    return runs["rounds_phase2"].notna()


def missing_phase_columns(runs: pd.DataFrame) -> int:
    """Two-phase runs without per-phase values (recorded before they existed)."""
    if runs.empty:
        return 0
    lacking = _column(runs, "tokens_total_phase2").isna()
    return int((two_phase(runs) & lacking).sum())


def by_phase(runs: pd.DataFrame, accounting: str = DEFAULT) -> pd.DataFrame:
    """`runs` with every PHASED column replaced by its value under `accounting` (plus a
    column `accounting` naming it). One-phase runs have one phase: `final` and `phase1`
    give their whole-run values."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting: {accounting!r} is not one of {', '.join(ACCOUNTINGS)}")
    out = runs.copy()
    if runs.empty or accounting == "run":
        return out.assign(accounting=accounting)
    second = two_phase(runs)
    for name in PHASED:
        if name not in runs.columns:
            continue
        whole = runs[name]
        p1, p2 = _column(runs, f"{name}_phase1"), _column(runs, f"{name}_phase2")
        if name in SCORED:  # the final submissions' score is known for every run, old records included
            p2 = whole.where(second, p2)
        if accounting == "phase2":
            value = p2
        else:
            # a one-phase run's phase 1 is the whole run (older records lack the phase-1 column)
            first = p1.where(p1.notna() | second, whole)
            value = first if accounting == "phase1" else p2.where(second, first)
        out[name] = value
    return out.assign(accounting=accounting)


def phase_table(runs: pd.DataFrame) -> pd.DataFrame:
    """R, TE, CR% and mean total tokens of two-phase runs by (model, condition, protocol),
    under each accounting: phase 1, phase 2 (= final, the default of the tables) and run.
    Each mean is followed by its sample SD over runs (`<col> sd`); tokens also by `tokens n`
    (runs that recorded them); the cell's runs are in ("all phases", "runs")."""
    runs = runs[two_phase(runs)] if not runs.empty else runs
    if runs.empty:
        return pd.DataFrame()
    keys = ["model", "condition", "protocol"]
    parts = {}
    for accounting, label in (("phase1", "phase 1"), ("phase2", "phase 2 (final)"), ("run", "whole run")):
        view = by_phase(runs, accounting)
        parts[label] = pd.concat([spread_columns(view, keys, "rounds", "R", with_n=False),
                                  spread_columns(view, keys, "te", "TE", with_n=False),
                                  spread_columns(view, keys, "cr", "CR%", 100.0, with_n=False),
                                  spread_columns(view, keys, "tokens_total", "tokens")], axis=1)
    table = pd.concat(parts, axis=1)
    table[("all phases", "runs")] = runs.groupby(keys, dropna=False)["run_id"].count()
    return table


def _column(runs: pd.DataFrame, name: str) -> pd.Series:
    return runs[name] if name in runs.columns else pd.Series(np.nan, index=runs.index, dtype=float)
