"""Schedulers decide who speaks when; the driver owns everything else.

A scheduler runs one phase against a `PhaseContext`: the agents (to step), the
environment (to apply replies), and the event log. Lockstep (MAS-Bench, SILO-Bench,
AgentsNet), local rounds (AgentsNet) and sequential (SIMAS: one agent after another,
each seeing all earlier turns) are implemented; asynchronous (CooperBench: each agent its
own tool loop, asynchronous.py) plugs in by registering another `Scheduler`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol
from collections.abc import Awaitable, Callable

from masgrid._private.actors.backends import Completion
from masgrid._private.actors.environment import OutcomeRecord
from masgrid._private.envs.registry import Registry
from masgrid.family import families


class AgentPool(Protocol):
    """All agents of a run, wherever they are hosted."""

    n_agents: int

    async def step(self, observations: dict[int, list[str]], expect: str | None = None,
                   round_no: int | None = None) -> dict[int, Completion]: ...

    async def act(self, agent: int, new_messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion: ...


class EnvironmentPort(Protocol):
    async def apply_round(self, round_no: int, replies: list[tuple[int, str | None, str | None]]) -> dict[int, list[OutcomeRecord]]: ...

    async def opening(self) -> dict[int, list[str]]: ...

    async def submissions(self) -> list[Any]: ...

    async def rounds_of(self, turns: int) -> list[int]: ...


@dataclass
class PhaseContext:
    phase: int
    n_agents: int
    max_rounds: int
    agents: AgentPool
    env: EnvironmentPort
    on_round: Callable[[int, int, dict[int, Completion], dict[int, list[OutcomeRecord]]], Awaitable[None]]
    #: for schedulers that need them (asynchronous): the run's task and instance, and the
    #: recorder of one agent step (phase, step, agent, call start, completion or None,
    #: event rows before the call, event rows after it)
    task: Any = None
    instance: Any = None
    record_step: Callable[..., Awaitable[None]] | None = None
    #: the run's token counter (execution.token_counter, resolved): the asynchronous
    #: schedule counts its communication tokens with it, as the environment does for commands
    count_tokens: Callable[[str], int] | None = None
    #: the run's unreliable channel (envs/channel.py), for schedulers that route messages
    #: themselves (asynchronous); None: perfect delivery
    channel: Any = None


@dataclass
class PhaseResult:
    rounds: int
    submissions: list[Any]
    calls_per_agent: list[int] = field(default_factory=list)


class Scheduler(ABC):
    name: str

    @abstractmethod
    async def run_phase(self, ctx: PhaseContext) -> PhaseResult: ...


#: schedule name -> the module whose import registers it (masgrid/_private/envs/registry.py): a
#: driver finds every schedule whatever it imported before
_PROVIDERS: dict[str, str] = {
    "lockstep": "masgrid._private.platform.schedulers.lockstep",
    "sequential": "masgrid._private.platform.schedulers.sequential",
    "asynchronous": "masgrid._private.platform.schedulers.asynchronous",
}

SCHEDULERS: Registry[type[Scheduler]] = Registry("schedule", {
    **_PROVIDERS, **{name: module for family in families().values() for name, module in family.schedules.items()}})


def register_scheduler(cls: type[Scheduler]) -> type[Scheduler]:
    return SCHEDULERS.register(cls.name, cls)


def get_scheduler(name: str) -> Scheduler:
    """A fresh scheduler for `name`; UnknownName (KeyError and ValueError) lists the schedules."""
    return SCHEDULERS[name]()
