"""Mailboxes shared by the broadcasting and P2P substrates (MAS-Bench E.2/E.3).

Rows are kept in insertion order; a receive returns the caller's unread rows and marks
them read, so no message is returned twice. With `next_round_visibility` (SILO A.5) a
receive in round r returns only rows sent before round r: the inbox is filled atomically
at round start, whatever order the agents' replies are applied in.

With `round_start_roster` (SILO A.5) the agents that count as submitted during round r
are those that submitted before r: a send to an agent that submits in round r is
accepted whatever the order of the replies, and it is settled in `close_round`: it counts
as delivered (`deliveries`, `peers`, hence D) only if its receiver is still active at the
round boundary, when inboxes are filled; a receiver that submitted never reads it.
Without it (MAS-Bench) a send is refused or delivered at once, by the state after the
replies applied before it (agent-id order, Algorithm 2).

With an unreliable channel (docs/channel.md) each (message, receiver) pair is one channel
message: a lost one is never stored, a delayed one becomes readable `delay_rounds` rounds
later, a duplicated one is stored twice, a reordered one goes ahead of the receiver's other
unread rows that become readable in the same round. Each row then carries the round it is
readable from (`visible_round`) and every inbox is kept sorted by it, so the readable rows
stay a prefix of the inbox.
On a restricted communication graph (`topology`, the instance's neighbour lists) a message
reaches only the sender's neighbours: p2p refuses any other receiver, broadcast fans out to
the neighbours only (docs/topology.md). On the complete graph nothing changes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from masgrid._private.envs.channel import ChannelNote
from masgrid._private.envs.harness import CommandOutcome
from masgrid._private.envs.protocols.base import Protocol, agent_name


@dataclass
class MessageRow:
    id: int
    sender: int
    receiver: int
    content: str
    sent_round: int
    read: bool = False
    visible_round: int | None = None  # with a channel: the round the row is readable from


class MailboxProtocol(Protocol):
    """Base for substrates where agents pull their unread messages."""

    receive_prefix = "from"
    graph_aware = True
    #: each agent's neighbours on a restricted graph; None: the complete graph
    neighbors: list[frozenset[int]] | None = None

    def attach(self, instance: Any) -> None:
        adj = getattr(instance, "neighbors", None)
        self.neighbors = None if adj is None else [frozenset(a) for a in adj]

    def reachable(self, sender: int, receiver: int) -> bool:
        """Whether the graph links `sender` to `receiver` (always, on the complete graph)."""
        return self.neighbors is None or receiver in self.neighbors[sender]

    def reset(self) -> None:
        super().reset()
        self.rows: list[MessageRow] = []
        #: each receiver's unread rows, oldest first: a receive reads its own inbox instead of
        #: scanning every message of the run (at N = 1,000 that scan was most of a round)
        self._unread: dict[int, list[MessageRow]] = {}
        self._offline_at_start: frozenset[int] = frozenset()
        self._pending: list[tuple[CommandOutcome, list[int]]] = []

    def begin_round(self, round_no: int) -> None:
        super().begin_round(round_no)
        if self.options.round_start_roster:
            self._offline_at_start = frozenset(j for j in range(self.n_agents) if self.submitted(j))
            self._pending = []

    def offline(self, agent: int) -> bool:
        """Whether `agent` counts as submitted for the round's senders (see the module docstring)."""
        if self.options.round_start_roster:
            return agent in self._offline_at_start
        return self.submitted(agent)

    def deliver(self, sender: int, receivers: list[int], content: str, out: CommandOutcome) -> None:
        """Store one message per receiver and account for it: at once (MAS-Bench), or at
        `close_round` by who is still active (round_start_roster). Through the channel, a
        lost message is not stored and does not count as delivered."""
        if self.channel is None:
            for j in receivers:
                self.insert(sender, j, content)
        else:
            receivers = self._through_channel(sender, receivers, content, out)
        out.extra["peers"] = list(receivers)
        if self.options.round_start_roster:
            self._pending.append((out, list(receivers)))
        else:
            out.deliveries = len(receivers)

    def close_round(self) -> None:
        for out, receivers in self._pending:
            reached = [j for j in receivers if not self.submitted(j)]
            out.deliveries = len(reached)
            out.extra["peers"] = reached
            if len(reached) < len(receivers):
                out.extra["undelivered"] = [j for j in receivers if j not in reached]
        self._pending = []

    def insert(self, sender: int, receiver: int, content: str) -> None:
        row = MessageRow(len(self.rows) + 1, sender, receiver, content, self.round)
        self.rows.append(row)
        if self.channel is None:
            self._unread.setdefault(receiver, []).append(row)
        else:  # a harness notice: reliable, but placed by when it is readable (see the module docstring)
            self._place(row, front=False)

    def _through_channel(self, sender: int, receivers: list[int], content: str, out: CommandOutcome) -> list[int]:
        """Store what the channel lets through; the receivers it reached."""
        assert self.channel is not None
        note = ChannelNote.empty()
        reached = []
        on_time = self.round + (1 if self.options.next_round_visibility else 0)
        for j in receivers:
            fate = self.channel.fate(sender, j)
            note.add(j, fate, on_time + fate.delay)
            if fate.lost:
                continue
            reached.append(j)
            for _ in range(fate.copies):
                row = MessageRow(len(self.rows) + 1, sender, j, content, self.round, visible_round=on_time + fate.delay)
                self.rows.append(row)
                self._place(row, front=fate.reordered)
        out.extra["channel"] = note
        return reached

    def _readable_from(self, row: MessageRow) -> int:
        if row.visible_round is not None:
            return row.visible_round
        return row.sent_round + (1 if self.options.next_round_visibility else 0)

    def _place(self, row: MessageRow, front: bool) -> None:
        """Insert `row` into its receiver's inbox, kept sorted by the round rows become
        readable: after the rows readable no later than it, or (`front`, reordered) before
        the rows readable in the same round or later."""
        box = self._unread.setdefault(row.receiver, [])
        key = self._readable_from(row)
        at = (bisect_left if front else bisect_right)(box, key, key=self._readable_from)
        box.insert(at, row)

    def _receive(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        # rows enter an inbox in sending order, so the visible ones (sent before this round,
        # under next_round_visibility) are a prefix of it
        box = self._unread.get(agent, [])
        k = 0
        while k < len(box) and self.visible(box[k]):
            k += 1
        unread, self._unread[agent] = box[:k], box[k:]
        for row in unread:
            row.read = True
        out.extra["received"] = len(unread)
        out.extra["peers"] = [row.sender for row in unread]
        if not unread:
            return "no new messages"
        return "\n".join(f"{self.receive_prefix} {agent_name(r.sender)}: {r.content}" for r in unread)

    def visible(self, row: MessageRow) -> bool:
        if row.visible_round is not None:
            return row.visible_round <= self.round
        return not self.options.next_round_visibility or row.sent_round < self.round

    def message_log(self) -> list[dict]:
        """All rows, for the run record (who told whom what, and whether it was read)."""
        return [row.__dict__.copy() for row in self.rows]
