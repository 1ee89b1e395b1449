"""Broadcasting: one-to-all announcements, pulled with receive_messages (MAS-Bench E.2)."""

from __future__ import annotations

from typing import Any

from masgrid._private.envs.harness import CommandError, CommandOutcome
from masgrid._private.envs.protocols import register_protocol
from masgrid._private.envs.protocols.base import agent_name, format_answer
from masgrid._private.envs.protocols.messaging import MailboxProtocol


@register_protocol
class BroadcastProtocol(MailboxProtocol):
    name = "broadcast"
    receive_prefix = "broadcast from"
    verbs = {
        "receive_messages": "_receive",
        "broadcast_message": "_broadcast",
        "list_agents": "_list_agents",
    }
    communication_verbs = frozenset({"receive_messages", "broadcast_message", "list_agents"})
    bare_verbs = frozenset({"receive_messages", "list_agents"})
    channel_support = True
    body_verbs = frozenset({"broadcast_message"})

    def _broadcast(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        text = "\n".join(part for part in (args, body) if part).strip()
        if not text:
            raise CommandError("empty message; usage: broadcast_message <text>")
        receivers = self._fan_out(agent, text, out)
        out.messages_sent = 1
        verb = "sent" if self.options.round_start_roster else "delivered"
        if not receivers:
            return f"{verb} (no other agents)"
        return f"{verb} (" + ", ".join(agent_name(j) for j in receivers) + ")"

    def _fan_out(self, agent: int, text: str, out: CommandOutcome | None) -> list[int]:
        """Store `text` for every receiver; `out` None: a harness notice, not counted as a message."""
        # SILO A.5: an agent that submitted receives nothing more (deliver_to_submitted off).
        # a restricted topology: the sender's neighbours only
        receivers = [j for j in range(self.n_agents)
                     if j != agent and self.reachable(agent, j)
                     and (self.options.deliver_to_submitted or not self.offline(j))]
        if out is None:
            for j in receivers:
                self.insert(agent, j, text)
        else:
            self.deliver(agent, receivers, text, out)
        return receivers

    def _list_agents(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        # under round_start_roster: the status at the round start, the same for every agent
        return ", ".join(
            f"{agent_name(j)}: {'submitted' if self.offline(j) else 'active'}"
            + (" (you)" if j == agent else "")
            for j in range(self.n_agents) if j == agent or self.reachable(agent, j)
        )

    def on_submit(self, agent: int, value: Any, out: CommandOutcome) -> str:
        receivers = self._fan_out(agent, f"{agent_name(agent)} submitted result {format_answer(value)}", None)
        if not receivers:
            return "broadcasted to no other agents"
        return "broadcasted to " + ", ".join(agent_name(j) for j in receivers)
