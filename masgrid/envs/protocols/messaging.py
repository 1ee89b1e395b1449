"""Mailboxes shared by the broadcasting and P2P substrates (MAS-Bench E.2/E.3).

Rows are kept in insertion order; a receive returns the caller's unread rows and marks
them read, so no message is returned twice. With `next_round_visibility` (SILO A.5) a
receive in round r returns only rows sent before round r: the inbox is filled atomically
at round start, whatever order the agents' replies are applied in.
"""

from __future__ import annotations

from dataclasses import dataclass

from masgrid.envs.harness import CommandOutcome
from masgrid.envs.protocols.base import Protocol, agent_name


@dataclass
class MessageRow:
    id: int
    sender: int
    receiver: int
    content: str
    sent_round: int
    read: bool = False


class MailboxProtocol(Protocol):
    """Base for substrates where agents pull their unread messages."""

    receive_prefix = "from"

    def reset(self) -> None:
        super().reset()
        self.rows: list[MessageRow] = []

    def insert(self, sender: int, receiver: int, content: str) -> None:
        self.rows.append(MessageRow(len(self.rows) + 1, sender, receiver, content, self.round))

    def _receive(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        unread = [row for row in self.rows if row.receiver == agent and not row.read and self.visible(row)]
        for row in unread:
            row.read = True
        out.extra["received"] = len(unread)
        out.extra["peers"] = [row.sender for row in unread]
        if not unread:
            return "no new messages"
        return "\n".join(f"{self.receive_prefix} {agent_name(r.sender)}: {r.content}" for r in unread)

    def visible(self, row: MessageRow) -> bool:
        return not self.options.next_round_visibility or row.sent_round < self.round

    def message_log(self) -> list[dict]:
        """All rows, for the run record (who told whom what, and whether it was read)."""
        return [row.__dict__.copy() for row in self.rows]
