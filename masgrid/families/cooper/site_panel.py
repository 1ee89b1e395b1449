"""The CooperBench panel of a run page: each agent's diff, the merge, the test outcomes.

Everything comes from the run's own rows: an agent's submission (its patch against the base
commit, test files excluded, and its action counts), the runs row's merge stage and conflict
counts per stage, each feature's pass/fail from the evaluation, and the merge resolver's model
calls (`scoring_call` events, which belong to no agent). Nothing is re-run.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

Run = dict[str, Any]

#: a diff longer than this many characters is shown cut, with its full length
MAX_DIFF_CHARS = 200_000


def _json(value: Any) -> Any:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None


def _number(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _text(value: Any) -> str | None:
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def resolver_view(run: Run, scoring: pd.DataFrame | None) -> dict[str, Any] | None:
    """The llm merge stage: its model, outcome, and every call as sent and answered; None when
    the run did not configure the resolver."""
    model = _text(run.get("resolver_model"))
    if model is None:
        return None
    calls = []
    if scoring is not None and not scoring.empty:
        for _, e in scoring[scoring["kind"] == "scoring_call"].sort_values("seq").iterrows():
            calls.append({"prompt": _text(e.get("text")), "reply": _text(e.get("reply")),
                          "ok": bool(e.get("ok")), "error": _text(e.get("error")),
                          "tokens_in": _number(e.get("tokens_in")), "tokens_out": _number(e.get("tokens_out")),
                          "latency_s": None if pd.isna(e.get("latency_s")) else round(float(e.get("latency_s")), 3)})
    return {"model": model, "outcome": _text(run.get("resolver_outcome")),
            "failure": _text(run.get("resolver_failure")), "calls": calls}


def cooperbench_view(run: Run, agents: pd.DataFrame, scoring: pd.DataFrame | None = None) -> dict[str, Any]:
    """Diffs per agent, the merge stage and conflicts, per-feature test outcomes, the resolver's
    calls (`scoring`: the run's events that belong to no agent)."""
    diffs = []
    for _, row in agents.sort_values("agent").iterrows():
        sub = _json(row.get("submission")) or {}
        owned = _json(row.get("expected")) or []
        patch = str(sub.get("patch") or "") if isinstance(sub, dict) else ""
        diffs.append({
            "agent": int(row["agent"]), "features": [int(f) for f in owned] if isinstance(owned, list) else [],
            "patch": patch[:MAX_DIFF_CHARS], "patch_chars": len(patch), "cut": len(patch) > MAX_DIFF_CHARS,
            "finish": sub.get("finish") if isinstance(sub, dict) else None,
            "summary": sub.get("summary") if isinstance(sub, dict) else None,
            "actions": sub.get("actions") if isinstance(sub, dict) else None,
            "messages": sub.get("messages") if isinstance(sub, dict) else None,
            "capped": bool(sub.get("capped")) if isinstance(sub, dict) else False,
        })
    passed = _json(run.get("feature_pass_json")) or {}
    tests = [{"feature": int(f), "passed": bool(ok)} for f, ok in sorted(passed.items(), key=lambda kv: int(kv[0]))]
    notes = run.get("eval_notes")
    return {
        "setting": run.get("cooper_setting"), "features": run.get("cooper_features"),
        "sandbox": run.get("cooper_sandbox"),
        "merge": {"stage": run.get("merge_stage"), "conflicts_naive": _number(run.get("conflicts_naive")),
                  "conflicts_union": _number(run.get("conflicts_union")),
                  "conflicts_llm": _number(run.get("conflicts_llm")),
                  "notes": None if notes is None or (isinstance(notes, float) and pd.isna(notes)) else str(notes)},
        "tests": tests, "success": None if pd.isna(run.get("success")) else bool(run.get("success")),
        "diffs": diffs, "resolver": resolver_view(run, scoring),
    }


def panel(run: Run, agents: pd.DataFrame, events: pd.DataFrame, scoring: pd.DataFrame | None = None) -> dict[str, Any]:
    """The run page's CooperBench panel (site_panel.js draws it)."""
    return {"kind": "cooperbench", "view": cooperbench_view(run, agents, scoring)}
