"""The run page's relay panel: the true total and each agent's answer."""

from __future__ import annotations

from typing import Any


def panel(run: Any, agents: Any, events: Any, scoring: Any = None) -> dict[str, Any]:
    answers = {int(r.agent): str(r.submission) for r in agents.itertuples(index=False)}
    return {"kind": "relay", "total": int(run["relay_total"]), "answers": answers}
