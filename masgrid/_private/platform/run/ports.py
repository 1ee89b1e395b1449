"""Uniform async calls to a component that is either a Ray actor or a local object.

The driver talks to agents, environment and recorder through ports, so the same run
logic executes on Ray actors (default) or in one process (`execution.executor=local`).
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
from collections import Counter
from contextlib import contextmanager
from typing import Any
from collections.abc import Awaitable, Iterator

from masgrid._private.actors.backends import Completion
from masgrid._private.actors.environment import OutcomeRecord


class PortTrace:
    """Round trips between components and the pickled size of what each carried, by method:
    what a Ray run would ship between processes. For regression guards on the per-round
    cost (tests/platform/test_round_trips.py), never on in production runs."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.sent: dict[str, list[int]] = {}
        self.returned: dict[str, list[int]] = {}

    def record(self, method: str, args: tuple[Any, ...], result: Any) -> None:
        self.calls[method] += 1
        self.sent.setdefault(method, []).append(len(pickle.dumps(args)))
        self.returned.setdefault(method, []).append(len(pickle.dumps(result)))


_trace: PortTrace | None = None


@contextmanager
def trace_ports() -> Iterator[PortTrace]:
    """Record every Port call made in this process while the block runs."""
    global _trace
    _trace = PortTrace()
    try:
        yield _trace
    finally:
        _trace = None


class Port:
    def __init__(self, target: Any, remote: bool) -> None:
        self.target = target
        self.remote = remote

    async def call(self, method: str, *args: Any) -> Any:
        if self.remote:
            result = await getattr(self.target, method).remote(*args)
        else:
            result = getattr(self.target, method)(*args)
            result = await result if inspect.isawaitable(result) else result
        if _trace is not None:
            _trace.record(method, args, result)
        return result


class EnvironmentClient:
    def __init__(self, port: Port) -> None:
        self.port = port

    async def apply_round(self, round_no: int, replies: list[tuple[int, str | None, str | None]]) -> dict[int, list[OutcomeRecord]]:
        return await self.port.call("apply_round", round_no, replies)

    async def opening(self) -> dict[int, list[str]]:
        return await self.port.call("opening")

    async def submissions(self) -> list:
        return await self.port.call("submissions")

    async def rounds_of(self, turns: int) -> list[int]:
        return await self.port.call("rounds_of", turns)


class AgentPoolClient:
    """Routes each agent's step to its host; all hosts work concurrently."""

    def __init__(self, hosts: list[Port], assignment: list[int], round_timeout_s: float | None) -> None:
        self.hosts = hosts
        self.assignment = assignment
        self.n_agents = len(assignment)
        self.round_timeout_s = round_timeout_s

    def groups(self, agents: list[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for i in agents:
            out.setdefault(self.assignment[i], []).append(i)
        return out

    async def broadcast(self, method: str, per_host: dict[int, Any]) -> list[Any]:
        return await asyncio.gather(*(self.hosts[h].call(method, arg) for h, arg in per_host.items()))

    async def close(self) -> None:
        await asyncio.gather(*(host.call("close") for host in self.hosts))

    async def step(self, observations: dict[int, list[str]], expect: str | None = None) -> dict[int, Completion]:
        """One call per observed agent; `expect` names the reply kind the hosts validate."""
        per_host = {h: {i: observations[i] for i in ids} for h, ids in self.groups(list(observations)).items()}
        gathered: Awaitable[list[Any]]
        if expect is None:
            gathered = self.broadcast("step", per_host)
        else:
            gathered = asyncio.gather(*(self.hosts[h].call("step", arg, expect) for h, arg in per_host.items()))
        try:
            results = await asyncio.wait_for(gathered, timeout=self.round_timeout_s)
        except TimeoutError:
            raise RoundTimeout(f"model calls of a round did not finish within {self.round_timeout_s:.0f}s") from None
        merged: dict[int, Completion] = {}
        for part in results:
            merged.update(part)
        return merged

    async def act(self, agent: int, new_messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        """One tool-loop step of one agent on its host (AgentHost.act); steps of different
        agents run concurrently (the asynchronous schedule). A hung host is cut off like a round."""
        call = self.hosts[self.assignment[agent]].call("act", agent, new_messages, tools)
        try:
            return await asyncio.wait_for(call, timeout=self.round_timeout_s)
        except TimeoutError:
            raise RoundTimeout(f"agent {agent}'s model call did not finish within {self.round_timeout_s:.0f}s") from None


class RoundTimeout(RuntimeError):
    """A round's model calls outlived every per-call timeout and retry (a hung host)."""
