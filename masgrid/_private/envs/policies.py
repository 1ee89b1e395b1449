"""Scripted classical policies that play an agent through the text interface.

A policy sees exactly what a model sees after its system prompt: the harness replies to
its previous commands. It answers with fenced command blocks that go through the same
parser and protocol as a model's reply. `AllGather` is the classical all-to-all exchange
over each substrate; most tasks solve by gathering every agent's share, then computing
their own answer locally. On a restricted communication graph (`topology`) it floods: each
turn an agent passes every share it holds to each neighbour that may lack it, and it does so
once more in the reply that submits. A share moves one hop per two rounds (a receive's reply
is read in the next turn), so everyone submits within 2 x diameter + 2 rounds (docs/topology.md).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any

from masgrid._private.envs.tasks.base import AgentView
from masgrid._private.envs.tool_calls import ToolReply

DATA_TAG = "DATA"
_BROADCAST_LINE = re.compile(rf"^(?:broadcast from|from) Agent-(\d+): {DATA_TAG} (.*)$")
_CONTENT = re.compile(r"^content=(.*)$", re.DOTALL)
RELAY_TAG = "RELAY"  # a restricted graph's message: {"<origin agent>": payload, ...}
_RELAY_LINE = re.compile(rf"^(?:broadcast from|from) Agent-(\d+): {RELAY_TAG} (.*)$")


def fence(command: str) -> str:
    return f"```\n{command}\n```"


def reply(*commands: str, thought: str = "") -> str:
    """A model-like reply: optional reasoning, then one fenced block per command."""
    blocks = "\n".join(fence(c) for c in commands)
    return f"{thought}\n{blocks}" if thought else blocks


class ScriptedPolicy(ABC):
    """One agent's classical algorithm for one phase."""

    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        self.view = view
        self.protocol = protocol
        self.seed = seed

    @abstractmethod
    def act(self, observations: list[str]) -> str | ToolReply:
        """Next reply given the harness messages (and tool results) received since the
        previous reply; a policy offered tools may answer with a `ToolReply`."""


class AllGather:
    """All-to-all exchange of one JSON payload per agent over broadcast, p2p or kv."""

    def __init__(self, agent: int, n_agents: int, protocol: str, payload: Any, key_prefix: str = "data/",
                 neighbors: list[int] | None = None) -> None:
        if neighbors is not None and protocol not in ("broadcast", "p2p"):
            raise ValueError(f"AllGather cannot relay over protocol {protocol!r} on a restricted graph")
        self.agent = agent
        #: on a restricted graph: each neighbour and the origins whose shares it is known to hold
        self.known: dict[int, set[int]] | None = None if neighbors is None else {j: {j} for j in neighbors}
        self.n = n_agents
        self.protocol = protocol
        self.payload = payload
        self.key_prefix = key_prefix
        self.shared = False
        self.gathered: dict[int, Any] = {agent: payload}
        self._last_reads: list[int] = []  # kv: whose keys the previous turn read, in order

    def key(self, j: int) -> str:
        return f"{self.key_prefix}agent-{j}"

    @property
    def complete(self) -> bool:
        return len(self.gathered) == self.n

    def missing(self) -> list[int]:
        return [j for j in range(self.n) if j not in self.gathered]

    def ingest(self, observations: list[str]) -> None:
        if self.protocol == "kv":
            self._ingest_reads(observations)
            return
        for obs in observations:
            for line in obs.splitlines():
                match = _BROADCAST_LINE.match(line.strip())
                if match:
                    self.gathered[int(match.group(1))] = json.loads(match.group(2))
                relay = _RELAY_LINE.match(line.strip()) if self.known is not None else None
                if relay and self.known is not None:
                    shares = {int(origin): value for origin, value in json.loads(relay.group(2)).items()}
                    self.gathered.update(shares)
                    sender = int(relay.group(1))
                    if sender in self.known:  # a broadcast reaches all neighbours: they hold it too
                        self.known[sender] |= set(shares)

    def relays(self) -> list[str]:
        """Restricted graph: the messages that pass each neighbour the shares it may lack."""
        assert self.known is not None
        if self.protocol == "broadcast":
            new = {o: v for o, v in self.gathered.items() if not all(o in k for k in self.known.values())}
            for k in self.known.values():
                k |= set(new)
            return [f"broadcast_message {RELAY_TAG} {_relay_text(new)}"] if new else []
        cmds = []
        for j, held in self.known.items():
            new = {o: v for o, v in self.gathered.items() if o not in held}
            if new:
                cmds.append(f"send_message {j} {RELAY_TAG} {_relay_text(new)}")
                held |= set(new)
        return cmds

    def final_commands(self) -> list[str]:
        """What to send in the reply that submits: the last relays (none on the complete graph)."""
        return [] if self.known is None else self.relays()

    def _ingest_reads(self, observations: list[str]) -> None:
        # read_file replies come in the order the reads were issued (missing ones error).
        pending = iter(self._last_reads)
        for obs in observations:
            if obs.startswith("read_file") or obs.startswith("content="):
                j = next(pending, None)
                match = _CONTENT.match(obs)
                if j is not None and match:
                    self.gathered[j] = json.loads(match.group(1))

    def commands(self) -> list[str]:
        """Commands for this turn: share once, then fetch whatever is still missing."""
        text = json.dumps(self.payload, separators=(",", ":"))
        cmds: list[str] = []
        if self.known is not None:
            self.shared = True
            return [*self.relays(), "receive_messages"]
        if self.protocol == "broadcast":
            if not self.shared:
                cmds.append(f"broadcast_message {DATA_TAG} {text}")
            cmds.append("receive_messages")
        elif self.protocol == "p2p":
            if not self.shared:
                cmds += [f"send_message {j} {DATA_TAG} {text}" for j in range(self.n) if j != self.agent]
            cmds.append("receive_messages")
        elif self.protocol == "kv":
            # Write first; read from the next turn on, when every first write has landed.
            self._last_reads = self.missing() if self.shared else []
            if not self.shared:
                cmds.append(f"write_file {self.key(self.agent)}\n{text}")
            cmds += [f"read_file {self.key(j)}" for j in self._last_reads]
        else:
            raise ValueError(f"AllGather does not know protocol {self.protocol!r}")
        self.shared = True
        return cmds


def _relay_text(shares: dict[int, Any]) -> str:
    return json.dumps({str(o): shares[o] for o in sorted(shares)}, separators=(",", ":"))


class GatherThenSubmit(ScriptedPolicy):
    """Share a payload with everyone, gather everyone's, submit an answer computed locally."""

    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        self.exchange = AllGather(view.agent, view.n_agents, protocol, self.payload(), neighbors=view.neighbors)

    @abstractmethod
    def payload(self) -> Any:
        """What this agent shares (JSON-serialisable)."""

    @abstractmethod
    def answer(self, gathered: dict[int, Any]) -> str:
        """The submit_result argument, from every agent's payload."""

    def act(self, observations: list[str]) -> str:
        self.exchange.ingest(observations)
        if self.exchange.complete:
            return reply(*self.exchange.final_commands(), f"submit_result {self.answer(self.exchange.gathered)}",
                         thought="I have every agent's share; submitting my part.")
        return reply(*self.exchange.commands(), thought="Sharing my data and collecting the others'.")
