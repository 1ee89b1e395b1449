"""The run page's SIMAS panel: the group discussion in speaking order (site_panel.js draws it)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def group_chat(events: pd.DataFrame) -> list[dict[str, Any]]:
    """The discussion as the members wrote it, in order (discuss and final_answer)."""
    chat = events[(events["kind"] == "command") & events["verb"].isin(["discuss", "final_answer"])]
    return [{"agent": int(r.agent), "round": int(r.round), "phase": int(r.phase), "verb": r.verb,
             "text": r.text if isinstance(r.text, str) else ""}
            for r in chat.sort_values("seq").itertuples(index=False)]


def panel(run: Any, agents: pd.DataFrame, events: pd.DataFrame, scoring: pd.DataFrame | None = None) -> dict[str, Any]:
    return {"kind": "simas", "chat": group_chat(events)}
