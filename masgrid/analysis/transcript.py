"""Every model call's input, rebuilt from the events table alone.

The driver records each message that enters an agent's chat history as one event with a
`role` (docs/results.md): `prompt` (system), `observation` (user; its text, or the `reply`
of the event named by `source`), `model_call` (assistant, its reply; a failed call
leaves an empty message). In seq order within one agent's phase they are that agent's
history, so the input of a call is every message of its (agent, phase) recorded before it.
A pure function of one run's events, used by `masgrid show` and by the tests that compare
it with what a server received.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

Message = dict[str, str]


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

    @property
    def message(self) -> Message:
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
    rows = events.loc[events["role"].notna(), used].assign(capped_=text_capped).sort_values(["agent", "phase", "seq"])
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
        out.append(Turn(agent=int(row.agent), phase=int(row.phase), round=int(row.round), seq=int(row.seq),
                        kind=row.kind, verb=None if _missing(row.verb) else row.verb, role=row.role,
                        content=content, error=None if _missing(row.error) else row.error, capped=capped))
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
