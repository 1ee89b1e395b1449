"""P2P messaging: directed sends, refused once the receiver has submitted (MAS-Bench E.3).

Under SILO's `round_start_roster` "has submitted" means before the current round, and the
reply says the message was sent, not delivered: it reaches the receiver's inbox at the
round boundary only if the receiver is still active then (messaging.py).
"""

from __future__ import annotations

from masgrid._private.envs.harness import CommandError, CommandOutcome
from masgrid._private.envs.protocols import register_protocol
from masgrid._private.envs.protocols.base import agent_name
from masgrid._private.envs.protocols.messaging import MailboxProtocol


@register_protocol
class P2PProtocol(MailboxProtocol):
    name = "p2p"
    receive_prefix = "from"
    verbs = {"receive_messages": "_receive", "send_message": "_send"}
    communication_verbs = frozenset({"receive_messages", "send_message"})
    bare_verbs = frozenset({"receive_messages"})
    channel_support = True
    body_verbs = frozenset({"send_message"})

    def _send(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        target_ref, _, first_text = args.partition(" ")
        if not target_ref:
            raise CommandError("usage: send_message <to_id> <text>")
        target = self.parse_agent(target_ref)
        text = "\n".join(part for part in (first_text.strip(), body) if part).strip()
        if not text:
            raise CommandError("empty message; usage: send_message <to_id> <text>")
        if target == agent:
            raise CommandError("cannot send a message to yourself")
        if not self.reachable(agent, target):  # a restricted topology: nothing is inserted
            assert self.neighbors is not None
            mine = ", ".join(agent_name(j) for j in sorted(self.neighbors[agent])) or "none"
            raise CommandError(f"{agent_name(target)} is not your neighbour; you can send only to: {mine}")
        if self.offline(target):
            # Refused at the harness layer: nothing is inserted (E.3).
            out.extra["refused"] = True
            return f"{agent_name(target)} is offline (already submitted); message not delivered"
        self.deliver(agent, [target], text, out)
        out.messages_sent = 1
        if self.options.round_start_roster:
            return f"sent to {agent_name(target)} (readable from the next round)"
        return f"delivered to {agent_name(target)}"
