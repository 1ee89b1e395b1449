"""Who knew whose data when: information sets replayed from a run's command events.

The core protocols' commands (broadcast and p2p messages, kv/SFS files) move data between
agents, and the events table records each transfer (`peers`). What an agent knows when it
acts in round r is what its model had seen: the replies of rounds before r (the replies to
its round-r commands reach it only at its next call). A message carries the sender's
information set as of the start of the round in which it was *sent*, matched to its
receipt per sender-receiver pair in order; a file carries its writer's set as of the start
of the round of the write that the reader saw (replayed from the write/delete events).
Transitive, so an agent told the result by a collector counts as informed by everyone the
collector had heard from; `transitive=False` counts direct senders only. This is an upper
bound on what the sender put in the message.

Failure analyses of several families read it (SILO-Bench's premature submissions,
MAS-Bench's), so it lives here, public as `masgrid.sdk.information`.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

import numpy as np
import pandas as pd

#: command verbs that send a message (broadcast or p2p)
SEND_VERBS = frozenset({"send_message", "broadcast_message"})


def peers_of(value: Any) -> list[int]:
    """An event's `peers` cell as agent ids (null or NaN: none)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return [int(v) for v in value]


def ordered(events: pd.DataFrame) -> pd.DataFrame:
    """Events in the order they happened (phase, then seq)."""
    return events.sort_values(["phase", "seq"]) if "phase" in events.columns else events.sort_values("seq")


def information_at_submission(events: pd.DataFrame, n: int, transitive: bool = True) -> dict[int, set[int]]:
    """Agent -> the agents whose information it had when it submitted (successful submits only)."""
    return _Replay(n, transitive).run(events)


class _Replay:
    """Information sets over one run's command events (see the module docstring)."""

    def __init__(self, n: int, transitive: bool) -> None:
        self.transitive = transitive
        self.know = [{i} for i in range(n)]
        self.mail: dict[tuple[int, int], deque[set[int]]] = defaultdict(deque)  # (sender, receiver) -> carried sets
        self.files: dict[str, tuple[int, set[int]]] = {}  # path -> (writer, carried set), as of the last round end
        self.at_submit: dict[int, set[int]] = {}

    def carried(self, sender: int, start: list[set[int]]) -> set[int]:
        return set(start[sender]) if self.transitive else {sender}

    def run(self, events: pd.DataFrame) -> dict[int, set[int]]:
        commands = ordered(events[events["kind"] == "command"])
        for _, rows in commands.groupby(["phase", "round"], sort=True):
            start = [set(k) for k in self.know]  # what each model had seen when it wrote this round's reply
            writes: list[tuple[str, int, set[int] | None]] = []
            for row in rows.itertuples(index=False):
                if row.ok:
                    self.apply(row, start, writes)
            for path, writer, carried in writes:  # SFS: others see the round's writes from the next round
                if carried is None:
                    self.files.pop(path, None)
                else:
                    self.files[path] = (writer, carried)
        return self.at_submit

    def apply(self, row: Any, start: list[set[int]], writes: list) -> None:
        agent, verb = int(row.agent), row.verb
        if verb in SEND_VERBS:
            for j in peers_of(row.peers):
                self.mail[(agent, j)].append(self.carried(agent, start))
        elif verb == "receive_messages":
            for j in peers_of(row.peers):
                queue = self.mail[(j, agent)]
                self.know[agent] |= queue.popleft() if queue else self.carried(j, start)
        elif verb == "read_file":
            for j in peers_of(row.peers):
                writer, carried = self.files.get(command_path(row), (None, set()))
                self.know[agent] |= carried if writer == j else self.carried(j, start)
        elif verb == "write_file":
            writes.append((command_path(row), agent, self.carried(agent, start)))
        elif verb == "delete_file":
            writes.append((command_path(row), agent, None))
        elif verb == "submit_result" and agent not in self.at_submit:
            self.at_submit[agent] = set(start[agent])


def command_path(row: Any) -> str:
    """The path argument of an SFS command event (`text` holds the command block)."""
    text = getattr(row, "text", None)
    first = text.split("\n", 1)[0].split() if isinstance(text, str) else []
    return first[1] if len(first) > 1 else ""
