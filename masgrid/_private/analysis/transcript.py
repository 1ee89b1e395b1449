"""Every model call's input, rebuilt from the events table alone.

The driver records each message that enters an agent's chat history as one event with a
`role` (docs/results.md): `prompt` (system), `observation` (user; its text, or the `reply`
of the event named by `source`), `model_call` (assistant, its reply; a failed call
leaves an empty message). In seq order within one agent's phase they are that agent's
history, so the input of a call is every message of its (agent, phase) recorded before it.
Replies with tool calls (CooperBench) carry them in `tool_calls` and the tool results their
call's `tool_call_id`, so those histories rebuild in OpenAI form as the server received them.
A pure function of one run's events, used by `masgrid show` and by the tests that compare
it with what a server received.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

Message = dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One message of an agent's history, with where it came from."""

    agent: int
    phase: int
    round: int
    seq: int
    kind: str
    verb: str | None
    role: str
    content: str
    error: str | None = None
    #: the recorded content is only the start of the message (execution.max_recorded_chars):
    #: its full length and sha256 are in the events' text_chars/reply_chars and *_sha256
    capped: bool = False
    #: an assistant turn's tool calls (OpenAI tool_calls list); a tool result's call id
    tool_calls: tuple[dict[str, Any], ...] | None = None
    tool_call_id: str | None = None

    @property
    def display(self) -> str:
        """The message as a reader sees it: its text, then each tool call with its id."""
        if self.tool_calls is None:
            return self.content
        calls = [f"[tool call {c.get('id')}] {c.get('function', {}).get('name')} {c.get('function', {}).get('arguments')}"
                 for c in self.tool_calls]
        return "\n".join(([self.content] if self.content else []) + calls)

    @property
    def message(self) -> Message:
        if self.role == "tool" and self.tool_call_id is not None:
            return {"role": "tool", "tool_call_id": self.tool_call_id, "content": self.content}
        if self.tool_calls is not None:
            return {"role": self.role, "content": self.content, "tool_calls": [dict(c) for c in self.tool_calls]}
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Call:
    """One model call: the messages it was sent and the turn it produced."""

    reply: Turn
    messages: list[Message] = field(default_factory=list)
    #: some message of the input or the reply was recorded capped: not a byte-exact rebuild
    capped: bool = False


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def turns(events: pd.DataFrame) -> list[Turn]:
    """The history messages of one run, ordered by agent, phase and seq."""
    if events.empty:
        return []
    if events["run_id"].nunique() != 1:
        raise ValueError("turns() takes the events of one run")
    replies = dict(zip(events["seq"].astype(int), events["reply"]))
    # results written before texts were capped have no *_chars columns: nothing was capped
    no_cap = pd.Series(pd.NA, index=events.index)
    text_capped = events.get("text_chars", no_cap).notna()
    reply_capped = dict(zip(events["seq"].astype(int), events.get("reply_chars", no_cap).notna()))
    # only the columns read below: itertuples costs a column lookup per column (report site: 1,000s of runs)
    used = ["agent", "phase", "round", "seq", "kind", "verb", "role", "text", "source", "error"]
    absent = pd.Series(None, index=events.index, dtype=object)  # results written before tool calls were kept
    rows = events.loc[events["role"].notna(), used].assign(
        capped_=text_capped, calls_=events.get("tool_calls", absent), call_id_=events.get("tool_call_id", absent),
    ).sort_values(["agent", "phase", "seq"])
    out: list[Turn] = []
    for row in rows.itertuples(index=False):
        capped = bool(row.capped_)
        if not _missing(row.text):
            content = row.text
        elif not _missing(row.source):
            content = replies[int(row.source)]
            capped = reply_capped[int(row.source)]
        elif row.role == "assistant":
            content = ""  # a failed call leaves an empty assistant turn
        else:
            raise ValueError(f"event {row.seq}: a {row.role} message with neither text nor source")
        tool_calls = None
        if not _missing(row.calls_):
            recorded = json.loads(row.calls_)
            content = content[:recorded["content_chars"]]  # `text` is the reply, then its calls as blocks
            if recorded.get("capped"):  # too long to keep: the turn is not an exact rebuild
                capped = True
            else:
                tool_calls = tuple(recorded["calls"])
        out.append(Turn(agent=int(row.agent), phase=int(row.phase), round=int(row.round), seq=int(row.seq),
                        kind=row.kind, verb=None if _missing(row.verb) else row.verb, role=row.role,
                        content=content, error=None if _missing(row.error) else row.error, capped=capped,
                        tool_calls=tool_calls, tool_call_id=None if _missing(row.call_id_) else str(row.call_id_)))
    return out


def calls(events: pd.DataFrame) -> list[Call]:
    """Each model call of one run (retries included) with the exact message list it was sent."""
    out: list[Call] = []
    history: list[Message] = []
    key: tuple[int, int] | None = None
    capped = False  # some message so far in this history was capped
    for turn in turns(events):
        if (turn.agent, turn.phase) != key:
            key, history, capped = (turn.agent, turn.phase), [], False
        if turn.kind == "model_call":
            out.append(Call(reply=turn, messages=list(history), capped=capped or turn.capped))
        history.append(turn.message)
        capped = capped or turn.capped
    return out
