"""Schedulers decide who speaks when; the driver owns everything else.

A scheduler runs one phase against a `PhaseContext`: the agents (to step), the
environment (to apply replies), and the event log. Lockstep (MAS-Bench, SILO-Bench,
AgentsNet), local rounds (AgentsNet) and sequential (SIMAS: one agent after another,
each seeing all earlier turns) are implemented; asynchronous (CooperBench: each agent its
own tool loop, asynchronous.py) plugs in by registering another `Scheduler`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from masgrid._private.actors.backends import Completion
from masgrid._private.actors.environment import OutcomeRecord
from masgrid._private.envs.registry import Registry
from masgrid.family import families

if TYPE_CHECKING:
    from masgrid._private.envs.channel import Channel
    from masgrid._private.envs.tasks.base import Instance, Task

#: (phase, step, agent, call start, completion or None, event rows before the call, event rows after it)
RecordStep = Callable[[int, int, int, "float | None", "Completion | None", list[dict[str, Any]],
                       list[dict[str, Any]]], Awaitable[None]]


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
    #: the run's task and instance; the recorder of one agent step, which a schedule that steps
    #: agents' own loops (`Scheduler.steps_agents`) calls instead of `on_round`
    task: Task | None = None
    instance: Instance | None = None
    record_step: RecordStep | None = None
    #: the run's token counter (execution.token_counter, resolved), given to a schedule that
    #: counts its messages' tokens itself (`Scheduler.counts_message_tokens`)
    count_tokens: Callable[[str], int] | None = None
    #: the run's unreliable channel (envs/channel.py), given to a schedule that routes messages
    #: itself (`Scheduler.routes_messages`); None: perfect delivery
    channel: Channel | None = None


@dataclass
class PhaseResult:
    rounds: int
    submissions: list[Any]
    calls_per_agent: list[int] = field(default_factory=list)


class Scheduler(ABC):
    """One way of ordering turns. The class says what it needs from the driver beyond the agents
    and the environment, so the driver asks the schedule instead of testing its name."""

    name: str
    #: steps each agent's own loop (tool calls) and records each step itself: the context
    #: carries the task, the instance and `record_step`, and every event is stamped with its time
    steps_agents: ClassVar[bool] = False
    #: counts its messages' tokens itself (else the environment counts commands' tokens)
    counts_message_tokens: ClassVar[bool] = False
    #: delivers messages itself, so the run's unreliable channel is handed to it
    routes_messages: ClassVar[bool] = False
    #: where execution.components=auto puts the run's environment and agent hosts: "driver" for a
    #: schedule whose turns never overlap (nothing to gain from other processes; four runs then
    #: share a driver process), "actors" where the environment works while agents call
    placement: ClassVar[Literal["driver", "actors"]] = "actors"
    #: runs_per_driver > 1 may pack this schedule's components into the driver under auto
    packs_in_driver: ClassVar[bool] = True

    @abstractmethod
    async def run_phase(self, ctx: PhaseContext) -> PhaseResult: ...


#: schedule name -> the module whose import registers it (masgrid/_private/envs/registry.py): a
#: driver finds every schedule whatever it imported before
_PROVIDERS: dict[str, str] = {
    "lockstep": "masgrid._private.platform.run.schedulers.lockstep",
    "sequential": "masgrid._private.platform.run.schedulers.sequential",
    "asynchronous": "masgrid._private.platform.run.schedulers.asynchronous",
}

SCHEDULERS: Registry[type[Scheduler]] = Registry("schedule", {
    **_PROVIDERS, **{name: module for family in families().values() for name, module in family.schedules.items()}})


def register_scheduler(cls: type[Scheduler]) -> type[Scheduler]:
    return SCHEDULERS.register(cls.name, cls)


def scheduler_class(name: str) -> type[Scheduler]:
    """The schedule `name` (what it needs, before a run builds one); UnknownName lists the schedules."""
    return SCHEDULERS[name]


def get_scheduler(name: str) -> Scheduler:
    """A fresh scheduler for `name`; UnknownName (KeyError and ValueError) lists the schedules."""
    return SCHEDULERS[name]()
