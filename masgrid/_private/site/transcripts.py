"""Each agent's transcript for the run page: its chat history exactly as its model saw it,
with the environment's records in between.

Two kinds of entries, in `seq` order per agent and phase:
- messages (`m`: true): the events with a `role`, i.e. the chat history the model was sent.
  Their content comes from `analysis.transcript.turns`, which resolves an observation that
  repeats an earlier reply (`source`), so what is shown is what the model received.
- records (`m`: false): commands the environment executed from a reply (the command and its
  answer), harness notes and LOCAL deliveries. The model saw their replies only through the
  observation messages that follow; they are shown for auditing.
A failed call, a command answered with an error, a harness note and a retry are flagged
(`flag`) so the page can highlight them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from masgrid._private.analysis.transcript import turns


def _text(value: object) -> str | None:
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _flag(kind: str, verb: str | None, ok: object, error: str | None) -> str | None:
    """Why an entry deserves attention, None if it does not."""
    if error or (kind == "model_call" and ok is False):
        return "model error"
    if verb == "invalid_reply":
        return "invalid reply (retried)"
    if verb == "retry":
        return "retry request"
    if verb == "stacked":
        return "stacked block"
    if kind == "harness":
        return "harness"
    if kind == "command" and ok is False:
        return "command error"
    return None


def agent_transcripts(events: pd.DataFrame) -> dict[int, list[dict[str, Any]]]:
    """agent -> its entries (see the module docstring) for the events of one run."""
    if events.empty:
        return {}
    content = {t.seq: t for t in turns(events)}
    out: dict[int, list[dict[str, Any]]] = {}
    cols = ["seq", "phase", "round", "agent", "kind", "verb", "role", "text", "reply", "ok", "error"]
    for row in events.sort_values(["agent", "phase", "seq"])[cols].itertuples(index=False):
        seq, verb, error = int(row.seq), _text(row.verb), _text(row.error)
        ok = None if pd.isna(row.ok) else bool(row.ok)
        entry: dict[str, Any] = {"s": seq, "p": int(row.phase), "r": int(row.round), "k": row.kind, "v": verb}
        turn = content.get(seq)
        if turn is not None:
            entry.update(m=True, role=turn.role, c=turn.display, cap=turn.capped)
            if turn.tool_call_id is not None:
                entry["id"] = turn.tool_call_id
        else:
            entry.update(m=False, t=_text(row.text), rp=_text(row.reply))
        entry["flag"] = _flag(row.kind, verb, ok, error)
        if error:
            entry["e"] = error
        out.setdefault(int(row.agent), []).append(entry)
    return out
