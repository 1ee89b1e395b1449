"""Which runs a table uses, and the sentence that says what it left out.

A run's `status` (docs/results.md, "Run status"): `ok`; `degraded` (some model calls failed,
within `validity.max_model_error_rate`: kept, flagged by its `model_error_rate`);
`invalid` (more failed: its numbers do not measure the model, left out by default);
`failed` (did not complete: never used). Every table and figure of the analysis layer
selects runs through `usable`, and every report prints `exclusion_note`.

A prompt edit changes a run's identity (`prompt_hash`), so a resumed sweep records the
affected grid points again; the older runs of the same point (`point_id`) stay on disk as
history but are superseded: tables use the prompt version of each point's newest run.
"""

from __future__ import annotations

import pandas as pd

USABLE = ("ok", "degraded")
#: a boolean column that, when present, overrides the status rule (report --include-invalid)
INCLUDED = "included"


def usable(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs whose metrics the tables use."""
    if runs.empty or "status" not in runs.columns:
        return runs
    current = runs[~superseded(runs)]
    if INCLUDED in runs.columns:
        return current[current[INCLUDED].astype(bool)]
    return current[current["status"].isin(USABLE)]


def superseded(runs: pd.DataFrame) -> pd.Series:
    """True for runs of a grid point recorded with older prompts than the point's newest run."""
    needed = {"point_id", "prompt_hash", "finished_at"}
    if runs.empty or not needed <= set(runs.columns) or runs["point_id"].isna().all():
        return pd.Series(False, index=runs.index)
    newest = runs.sort_values("finished_at").groupby("point_id", dropna=True)["prompt_hash"].last()
    current = runs["point_id"].map(newest)
    return runs["point_id"].notna() & (runs["prompt_hash"] != current)


def include_invalid(runs: pd.DataFrame) -> pd.DataFrame:
    """The same runs, marked so that tables also use invalid ones (failed runs never)."""
    if runs.empty or "status" not in runs.columns:
        return runs
    return runs.assign(**{INCLUDED: runs["status"].isin((*USABLE, "invalid"))})


def status_counts(runs: pd.DataFrame) -> dict[str, int]:
    if runs.empty or "status" not in runs.columns:
        return {}
    return {str(k): int(v) for k, v in runs["status"].value_counts().items()}


def exclusion_note(runs: pd.DataFrame) -> str:
    """One sentence: how many runs the tables use, and how many they left out and why."""
    counts = status_counts(runs)
    total = sum(counts.values())
    used = len(usable(runs))
    invalid_included = INCLUDED in runs.columns
    old = superseded(runs)
    counts = status_counts(runs[~old])
    reasons = {"failed": "failed (did not complete)"}
    if not invalid_included:
        reasons["invalid"] = "invalid (too many failed model calls)"
    parts = [f"{used} of {total} runs used"]
    if total - used:
        why = [f"{counts[s]} {text}" for s, text in reasons.items() if counts.get(s)]
        why += [f"{int(old.sum())} superseded (recorded with older prompts)"] if old.any() else []
        other = total - used - sum(counts.get(s, 0) for s in reasons) - int(old.sum())
        why += [f"{other} with another status"] if other > 0 else []
        parts.append(f"{total - used} left out: " + ", ".join(why))
    if invalid_included and counts.get("invalid"):
        parts.append(f"{counts['invalid']} invalid runs included on request")
    if counts.get("degraded"):
        parts.append(f"{counts['degraded']} degraded runs kept (some model calls failed; see model_error_rate)")
    return "; ".join(parts) + "."
