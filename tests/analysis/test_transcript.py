"""Rebuilding tool-calling histories from events (analysis/transcript.py), with the
model_call's `tool_calls` written by the driver's own encoder."""

from __future__ import annotations

import json
import random

import pandas as pd

from masgrid._private.actors.backends.base import Completion
from masgrid._private.analysis.transcript import calls
from masgrid._private.envs.tool_calls import ToolCall, with_calls
from masgrid._private.platform.run.driver import _history_calls


def events_of(rows: list[dict]) -> pd.DataFrame:
    base = {"run_id": "r", "agent": 0, "phase": 1, "round": 0, "verb": None, "source": None, "error": None,
            "reply": None}
    return pd.DataFrame([{**base, "seq": i, **row} for i, row in enumerate(rows)])


def history(rng: random.Random, cap: int | None) -> tuple[pd.DataFrame, list[dict], bool]:
    """Random steps of one agent: the events and, independently, the messages of the last call."""
    rows = [{"kind": "prompt", "role": "system", "text": "sys"}]
    sent: list[dict] = [{"role": "system", "content": "sys"}]
    capped = False
    for step in range(rng.randint(1, 4)):
        text = rng.choice(["", "thinking", "I will view it"])
        made = [ToolCall(id=f"c{step}_{k}", name=rng.choice(["view", "bash"]),
                         raw_arguments=json.dumps({"path": "x" * rng.randint(0, 60)})) for k in range(rng.randint(1, 3))]
        c = Completion(text=text, tool_calls=made)
        rows.append({"kind": "model_call", "role": "assistant", "text": with_calls(text, made),
                     "tool_calls": _history_calls(c, cap)})
        message = {"role": "assistant", "content": text,
                   "tool_calls": [{"id": t.id, "type": "function",
                                   "function": {"name": t.name, "arguments": t.raw_arguments}} for t in made]}
        too_long = cap is not None and len(json.dumps({"content_chars": len(text),
                                                       "calls": message["tool_calls"]})) > cap
        capped = capped or too_long
        sent.append({"role": "assistant", "content": text} if too_long else message)
        for t in made:
            result = f"result of {t.id}"
            rows.append({"kind": "tool_result", "role": "tool", "text": None, "reply": result, "source": len(rows),
                         "tool_call_id": t.id})
            sent.append({"role": "tool", "tool_call_id": t.id, "content": result})
    rows.append({"kind": "model_call", "role": "assistant", "text": "done", "tool_calls": None})
    return events_of(rows), sent, capped


def test_tool_calling_histories_rebuild_exactly_or_say_they_are_capped():
    rng = random.Random(3)
    seen_capped = 0
    for _ in range(200):
        cap = rng.choice([None, 100, 10_000])
        events, sent, capped = history(rng, cap)
        last = calls(events)[-1]
        assert last.messages == sent
        assert last.capped == capped
        seen_capped += capped
    assert 0 < seen_capped < 200
