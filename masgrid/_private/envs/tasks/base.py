"""Task: instance generator, prompt parts, answer parser, scorer and scripted policy.

A task is registered under its config name with `@register_task`, so adding one never
touches the runner. Everything here is pure (no Ray), so `masgrid instance/score` and the
analysis layer can use tasks on their own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from masgrid._private.envs.policies import ScriptedPolicy
    from masgrid._private.envs.protocols.base import ProtocolOptions


class Instance(BaseModel):
    """One generated problem: parameters, each agent's local input, expected answers."""

    model_config = ConfigDict(extra="forbid")

    task: str
    params: dict[str, Any]
    inputs: list[Any] = Field(description="local input of agent i at index i")
    expected: list[Any] = Field(description="expected answer of agent i at index i")
    meta: dict[str, Any] = Field(default_factory=dict, description="e.g. inversion rate rho")
    neighbors: list[list[int]] | None = Field(
        None, description="agent i's neighbours in the run's communication graph (`topology`); None: complete")

    @property
    def n_agents(self) -> int:
        return len(self.inputs)


class Score(BaseModel):
    """Outcome of scoring one set of submissions (None = the agent never submitted)."""

    #: None: the task has no answer key to score against (SIMAS generation questions are
    #: judged afterwards, `masgrid judge`); recorded as null, never as a made-up False
    success: bool | None
    correct: list[bool | None]
    partial: list[float | None] = Field(description="per-agent partial score in [0, 1], None when not scored")
    metrics: dict[str, float | int | bool | str | None] = Field(default_factory=dict)  # str: labels (AgentsNet flags)


class ScoringModel(BaseModel):
    """A model a task calls while it scores (CooperBench's merge resolver), not one of its agents.

    The platform reaches it through the agents' backend clients and records each call as an
    event of `actor`, with its tokens kept apart from the agents'. `settings` are model
    settings (the `model` block's fields, validated where the platform builds the client);
    None means the run's own model and backend."""

    model_config = ConfigDict(extra="forbid")

    actor: str = Field(description="who makes the calls, e.g. resolver (events, column prefix)")
    config_key: str = Field(description="the option that configures it, for error messages")
    settings: dict[str, Any] | None = None
    temperature: float | None = Field(None, ge=0, description="sampling temperature forced on every call")


class ScoringCallFailed(Exception):
    """A scoring model's call failed after its client's retries; the message says why."""


class AgentView(BaseModel):
    """Everything one agent is allowed to know at the start of a phase."""

    agent: int
    n_agents: int
    task: str
    params: dict[str, Any]
    local_input: Any
    phase: int = 1
    previous: Any = None  # the agent's own submission of the previous phase (reruns)
    neighbors: list[int] | None = None  # whom the agent can reach (`topology`); None: every other agent


class Task(ABC):
    name: ClassVar[str]
    family: ClassVar[str]
    schedule: ClassVar[str] = "lockstep"
    protocols: ClassVar[tuple[str, ...]] = ()
    conditions: ClassVar[tuple[str, ...]] = ("base",)
    #: run-config keys, beyond agents/k/seed and the family's option block, that `generate`
    #: receives as keywords (e.g. SILO's "condition", whose oracle-<N> values change the instance).
    generation_keys: ClassVar[tuple[str, ...]] = ()
    #: `k` when the run config leaves it unset (k=null), e.g. SILO's per-task workload.
    default_k: ClassVar[int] = 5
    #: run-config keys this family never reads (AgentsNet's `k`, MAS-Bench's `mode`, which a
    #: config may set at the top level: `Family.top_level`): they stand as
    #: None in its runs' identity, so runs differing only there are one run, and a sweep over
    #: them is refused rather than run as pseudo-replicates.
    ignored_keys: ClassVar[tuple[str, ...]] = ()
    #: whether its rows show the `ignored_keys` as null too (the family has no such notion, e.g.
    #: CooperBench's k and mode); False keeps the configured value in the columns
    null_ignored_columns: ClassVar[bool] = False
    #: conditions that are classical baselines, not prompts: only scripted agents run them
    #: (e.g. SILO's `isolated` floor); the config refuses them with a model backend.
    scripted_only_conditions: ClassVar[tuple[str, ...]] = ()
    #: what the task needs of its communication graph (`topology`, docs/topology.md): "complete"
    #: (it cannot run on a restricted graph), "connected" (every answer may need every agent's
    #: data: a connected graph; its scripted policy relays), "any", or "builds" (its generator
    #: takes `topology` and builds its own graph substrate on it; connected)
    topology_need: ClassVar[str] = "complete"

    def identity_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The family's option block (e.g. `agentsnet:`) as it enters the run identity:
        options that the other options make irrelevant are set to None here."""
        return options

    # -- generation ------------------------------------------------------------------------
    @abstractmethod
    def generate(self, agents: int, k: int, seed: int, **extra: Any) -> Instance:
        """Seeded: the same arguments give the same instance, distinct seeds distinct ones.
        `extra`: the family's option block as keywords, and the `generation_keys`."""

    def validate_params(self, agents: int, k: int, protocol: str, condition: str) -> None:
        """Raise ValueError naming the offending key when the task cannot run so."""
        if self.protocols and protocol not in self.protocols:
            raise ValueError(f"protocol: task {self.name} supports {list(self.protocols)}, not {protocol!r}")
        if condition not in self.conditions:
            raise ValueError(f"condition: task {self.name} supports {list(self.conditions)}, not {condition!r}")

    def resolve_agents(self, agents: int, **extra: Any) -> int:
        """The number of agents a run has: `agents` as configured, unless the family derives it
        from its own options (CooperBench: one per feature, or one in solo). `extra`: the
        family's validated option block; called on the config's input, before its fields."""
        return agents

    def validate_options(self, agents: int, k: int, seed: int, **extra: Any) -> None:
        """Raise ValueError naming the key for a combination `generate` would refuse.

        Cheap (no instance is built): the platform calls it while validating a run's config,
        so an impossible setting is an error before Ray starts, not a failed run after it.
        `extra` holds the same keywords `generate` receives.
        """

    def view(self, instance: Instance, agent: int, phase: int = 1, previous: Any = None) -> AgentView:
        return AgentView(
            agent=agent,
            n_agents=instance.n_agents,
            task=self.name,
            params=instance.params,
            local_input=instance.inputs[agent],
            phase=phase,
            previous=previous,
            neighbors=instance.neighbors[agent] if instance.neighbors is not None else None,
        )

    # -- a run's structure -----------------------------------------------------------------
    def phases(self, condition: str) -> int:
        return 1

    def phase_count(self, instance: Instance, condition: str) -> int:
        """Phases of this run; a task whose phases depend on its options (SIMAS's profile
        generation) overrides this, the others answer from the condition alone."""
        return self.phases(condition)

    def protocol_options(self, protocol: str, condition: str) -> ProtocolOptions | None:
        """Round semantics this task wants from the protocol; None keeps MAS-Bench's."""
        return None

    def round_notice(self, protocol: str, condition: str) -> str | None:
        """A harness message appended to every still-active agent's input each round."""
        return None

    def round_limit(self, instance: Instance, max_rounds: int) -> int:
        """Rounds the scheduler may run per phase; tasks with their own budget override."""
        return max_rounds

    @abstractmethod
    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        """The agent's system message; structurally identical across agents."""

    # -- answers ---------------------------------------------------------------------------
    @abstractmethod
    def parse_answer(self, instance: Instance, agent: int, raw: str) -> Any:
        """Parse a submit_result argument; ValueError (agent-visible) if malformed."""

    def submission(self, instance: Instance, agent: int, raw: str) -> tuple[Any, str | None]:
        """What a raw answer submits when it is scored outside a run (`masgrid score`), and why
        it was refused (None when it parsed). By default a refused answer submits nothing; a
        family whose protocol records refused final answers as a marker (SIMAS) returns that
        marker here, so a reply scores the same in a run and on the command line."""
        try:
            return self.parse_answer(instance, agent, raw), None
        except ValueError as exc:
            return None, str(exc) or type(exc).__name__

    @abstractmethod
    def score(self, instance: Instance, answers: list[Any]) -> Score: ...

    @abstractmethod
    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy: ...

    def scoring_model(self, **extra: Any) -> ScoringModel | None:
        """A model the scorer needs, from the generator's keywords; the driver then calls
        `score(instance, answers, ask=...)` with a blocking `ask(prompt) -> reply`. None
        (every task but CooperBench with its LLM resolver): `score` is called plainly."""
        return None

    def run_metrics(self, instance: Instance, score: Score, usage: dict[str, float]) -> dict[str, Any]:
        """Task-family metrics from the score and token usage; the platform adds common ones."""
        return {}

    def graph_edges(self, instance: Instance) -> list[tuple[int, int]] | None:
        """The task's own communication graph on the complete `topology` (agent ids), when its
        generator builds one (AgentsNet's graph models); None: no graph of its own."""
        return None

    def isolated_answers(self, instance: Instance) -> list[Any] | None:
        """What each agent would submit from its own input alone, without any message (the
        no-communication floor); None: the task defines no such baseline."""
        return None

    def no_communication_floor(self, instance: Instance) -> bool | None:
        """Whether `isolated_answers` solve this instance (the runs column comm_floor_success);
        None when the task defines no isolated answers or has no answer key."""
        answers = self.isolated_answers(instance)
        return None if answers is None else self.score(instance, answers).success

    def config_columns(self, **extra: Any) -> dict[str, Any]:
        """Run columns that follow from the configuration alone (the family options in `extra`),
        so a run that failed before it was scored still carries them; {} by default."""
        return {}
