"""EnvironmentHost: the run's protocol state, one per run, reset every phase.

Replies of a round are applied here sequentially in agent-id order (Algorithm 2 lines
4-17), then the protocol closes the round (`Protocol.close_round`); the host returns what
each agent is told and what each command cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from masgrid._private.actors import heap
from masgrid._private.envs.channel import ChannelSettings, make_channel
from masgrid._private.envs.harness import CommandOutcome
from masgrid._private.envs.protocols import make_protocol
from masgrid._private.envs.tasks import Instance, get_task
from masgrid._private.envs.tokens import get_counter


@dataclass(slots=True)
class OutcomeRecord:
    """One command (or harness reply) as it goes into the events table.

    A slotted dataclass, not a pydantic model: a round makes one or more per agent and
    ships them to the driver, and the fields are set by this module only (nothing to
    validate); building and pickling pydantic models was a measurable part of the per-call
    harness cost (benchmarks/bench_harness_per_call.py)."""

    agent: int
    kind: str  # "command" or "harness"
    verb: str
    block: str
    reply: str
    ok: bool
    communication: bool
    tokens_comm: int
    messages_sent: int
    deliveries: int
    submitted: Any = None
    read_other: bool = False
    received: int = 0
    peers: list[int] = field(default_factory=list)  # recipients of a send, senders of received messages, writer of a file read
    channel: dict[str, Any] | None = None  # what the channel did to the command's messages (ChannelNote.as_columns)


class EnvironmentHost:
    def __init__(self, protocol: str | None = None, instance: Instance | None = None,
                 token_counter: str = "approx", condition: str = "base", channel: ChannelSettings | None = None,
                 seed: int = 0) -> None:
        if protocol is not None and instance is not None:
            self.configure(protocol, instance, token_counter, condition, channel, seed)

    def configure(self, protocol: str, instance: Instance, token_counter: str = "approx",
                  condition: str = "base", channel: ChannelSettings | None = None, seed: int = 0) -> None:
        """(Re)initialise for a run; a pooled actor is configured afresh for every run."""
        task = get_task(instance.task)
        self.instance = instance
        self.count = get_counter(token_counter)
        self.protocol = make_protocol(protocol, instance.n_agents,
                                      lambda agent, raw: task.parse_answer(instance, agent, raw),
                                      task.protocol_options(protocol, condition))
        self.notice = task.round_notice(protocol, condition)
        # one channel per run: its message counters run on across phases (docs/channel.md)
        self.protocol.channel = make_channel(channel, seed)
        self.protocol.attach(instance)
        heap.settle()

    def ready(self) -> bool:
        return True

    def reset(self) -> None:
        self.protocol.reset()

    def opening(self) -> dict[int, list[str]]:
        """The protocol's first user message per agent (empty for command-block substrates)."""
        return self.protocol.opening()

    def apply_round(self, round_no: int, replies: list[tuple[int, str | None, str | None]]) -> dict[int, list[OutcomeRecord]]:
        self.protocol.begin_round(round_no)
        applied = {agent: self._apply(agent, text, error) for agent, text, error in sorted(replies, key=lambda r: r[0])}
        self.protocol.close_round()  # settles what depends on the whole round (SILO deliveries)
        out: dict[int, list[OutcomeRecord]] = {}
        for agent, outcomes in applied.items():
            records = []
            for o in outcomes:
                comm = self.count(o.block) + self.count(o.reply) if o.communication else 0
                records.append(OutcomeRecord(
                    agent=agent, kind="command" if (o.verb or o.block) and not o.harness else "harness", verb=o.verb,
                    block=o.block, reply=o.reply, ok=o.ok, communication=o.communication,
                    tokens_comm=comm, messages_sent=o.messages_sent, deliveries=o.deliveries,
                    submitted=o.submitted, read_other=bool(o.extra.get("read_other")),
                    received=int(o.extra.get("received", 0)), peers=list(o.extra.get("peers", [])),
                    channel=o.extra["channel"].as_columns() if "channel" in o.extra else None,
                ))
            out[agent] = records
        if self.notice:
            for agent, records in out.items():
                if not self.protocol.submitted(agent):
                    records.append(OutcomeRecord(agent=agent, kind="harness", verb="", block="", reply=self.notice,
                                                 ok=True, communication=False, tokens_comm=0, messages_sent=0,
                                                 deliveries=0))
        # Synchronous delivery (LOCAL): what the round sent reaches each agent as one
        # "delivery" record; substrates without an end-of-round step add nothing.
        for agent, texts in self.protocol.end_round().items():
            out.setdefault(agent, []).extend(
                OutcomeRecord(agent=agent, kind="delivery", verb="deliver", block="", reply=text, ok=True,
                              communication=False, tokens_comm=0, messages_sent=0, deliveries=0)
                for text in texts)
        return out

    def _apply(self, agent: int, text: str | None, error: str | None) -> list[Any]:
        """The protocol's outcomes of one reply; a reply too deep or too large for a parser
        becomes an agent-visible error instead of ending the run."""
        try:
            return self.protocol.apply_reply(agent, text, error)
        except (RecursionError, MemoryError) as exc:
            return [CommandOutcome(block="", verb="", ok=False,
                                   reply=f"your reply could not be processed ({type(exc).__name__}: it is nested "
                                         f"too deeply or too large)")]

    def submissions(self) -> list[Any]:
        return list(self.protocol.slots)

    def rounds_of(self, turns: int) -> list[int]:
        """The round each of a phase's first `turns` turns belongs to, for protocols that order
        turns (SIMAS's group chat: turn // n + 1; one turn per round otherwise). One call per
        phase: a call per turn cost a round trip and CPU on every turn of a latency-bound run
        (benchmarks/bench_simas_sweep.py)."""
        round_of = getattr(self.protocol, "round_of", None)
        return [round_of(t) if round_of is not None else t + 1 for t in range(turns)]
