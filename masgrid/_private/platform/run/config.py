"""The run configuration: one pydantic model validated before Ray starts.

Hydra composes `conf/config.yaml` (+ overrides); `RunConfig.from_mapping` validates it and
names the offending field. The user-facing keys are the same for every benchmark:
task, protocol, agents, k, condition, backend, model, seed, results_dir; a family's own
settings live in its option block (`agentsnet:`), and the few it declares top-level
(`Family.top_level`, e.g. MAS-Bench's `mode`) may also be given without the block's name.

Validation happens in three plain steps, each in one place, and no validator assigns a field
after the fact:
1. the input's forms (`_input_forms`, before the fields): a top-level family key moves into its
   block, a null protocol becomes the family's default, and a family that derives the number of
   agents from its options (`Task.resolve_agents`, CooperBench) gives `agents` its value;
2. each field by itself, where `k` (null: the task's default_k) and `execution` (auto settings
   as the task's schedule places runs) are resolved from the already validated `task`;
3. the checks across fields (`_consistent_across_fields`): the task's own limits, channel,
   topology, team, scoring model, serving. The team it resolves is kept as derived data
   (`team_resolved`), not a field.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Literal, Self
from collections.abc import Mapping

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, create_model,
                      field_validator, model_validator)

from masgrid._private.actors.backends import BackendSettings
from masgrid._private.actors.backends.sampling import compare_with_paper
from masgrid._private.envs.channel import RATES, ChannelSettings
from masgrid._private.envs.protocols import PROTOCOLS, get_protocol
from masgrid._private.envs.tokens import CounterChoice, check_spec, resolve_counter
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.team import Team, TeamSettings, composition_string, resolve_team
from masgrid._private.platform.run import team as team_mod
from masgrid._private.envs.tasks import Instance, Task
from masgrid._private.envs.topology import TopologySettings
from masgrid.family import default_task, families, family_of, top_level_keys
from masgrid._private.resources import on_reload

# Fields of `model` that change what a model answers (the rest is plumbing).
_MODEL_IDENTITY = ("name", "served_name", "temperature", "top_p", "max_tokens", "seed", "extra_body")
#: RunConfig fields that never enter a run's identity: where and how it executes, how its
#: outcome is labelled, and how it is filed.
NON_IDENTITY = ("results_dir", "execution", "model", "experiment", "tags", "validity", "preflight", "team")
#: prompt fingerprints per identity (without the fingerprint), for this process
_PROMPT_HASHES: dict[str, str] = {}
on_reload(_PROMPT_HASHES.clear)


class ValiditySettings(BaseModel):
    """When a run's model-call failures make its numbers untrustworthy (docs/results.md)."""

    model_config = ConfigDict(extra="forbid")

    max_model_error_rate: float = Field(
        0.05, ge=0, le=1, description="a run with any failed model call is `degraded`; above this fraction of "
        "failed calls it is `invalid` and left out of tables")


class ExecutionSettings(BaseModel):
    """How a run is executed; never part of its identity."""

    model_config = ConfigDict(extra="forbid")

    executor: Literal["ray", "local"] = Field("ray", description="ray actors, or in-process (debugging)")
    status_actor_after_s: float | Literal["auto"] | None = Field(
        "auto", description="warm-pool runs: start the run's named `run:<id>` status actor this many seconds "
        "into the run (a process start, 0.5-1.3 s of CPU; platform/run/run_status_actor.py); null: never. auto (default): "
        "30 s where a driver process executes one run at a time, never where it packs several "
        "(runs_per_driver > 1: many concurrent latency-bound runs on few cores, where one process per "
        "long run cost sequential-discussion sweeps their throughput); the run stays the dashboard task `run:<id>` either way")
    agents_per_actor: int = Field(100, ge=1, description="agents sharing one AgentHost actor (see benchmarks/bench_runtime.py)")
    components: Literal["auto", "actors", "driver"] = Field(
        "auto", description="where a Ray run's environment and agent hosts live: their own actors, or `driver`: "
        "objects inside the run's driver process, so a turn makes no Ray call and a run slot holds one process, "
        "not three. auto (default) picks per schedule: driver for the sequential schedule (its environment "
        "works only between calls), actors for lockstep and for the asynchronous schedule (whose sandboxed "
        "commands would pause the other agents' calls); an explicit value wins (docs/performance.md)")
    runs_per_driver: int | None = Field(
        None, ge=1, le=8, description="with components=driver, runs of a sweep (warm driver workers) that one driver "
        "process executes at once: C runs in flight then take C / runs_per_driver processes. null (default): 4 "
        "where components resolves to driver for the sequential schedule, else 1; an explicit value wins")
    prefix_cache: Literal["shared", "reset_per_run"] = Field(
        "shared", description="shared: runs find the engine's prefix cache as earlier runs left it; reset_per_run: "
        "the sweep resets the prefix cache of every engine (every replica) a run calls right before the run "
        "starts, and runs one run at a time per engine (runs in flight on one engine would warm each other's "
        "cache). For latency and cache studies; not part of a run's identity (it changes latency and cache "
        "figures, not outcomes); the runs column prefix_cache_reset records it (docs/sweeps.md)")
    ray_address: str | None = Field(None, description="join this cluster (e.g. 'auto'); None: RAY_ADDRESS, else a "
                                                       "running local head (masgrid up), else start local Ray")
    token_counter: str = Field(
        "auto", description="how tokens the server did not count (commands, replies, scripted agents) are "
        "counted: 'auto' (the model preset's `tokenizer`; 'approx' only when it names none or its file is "
        "missing here, recorded as a fallback), 'approx', 'hf:/path/to/tokenizer.json' or "
        "'hf-package:<package>/<path>'")
    round_timeout_s: float | None = Field(None, gt=0, description="cap on one round's model calls; default from model timeout")
    actor_start_timeout_s: float = Field(120.0, gt=0)
    reuse_actors: bool = Field(False, description="borrow warm environment/agent hosts from a pool across runs "
                                                   "(faster sweeps; hosts are then named pool:* not per run)")
    keep_warm: bool = Field(
        True, description="a single run or a sweep on a Ray cluster this command joined (`masgrid up`, `ray start "
        "--head`, an address) executes on detached driver workers (one per sweep slot), a host pool and a recorder "
        "that stay for the next command, which then starts no process (platform/sweeps/warm.py); false: the command's "
        "own processes, gone after it")
    driver_resources: dict[str, float] | None = Field(
        None, description="custom Ray resources each run's driver requests, e.g. {worker: 1} "
        "with `ray start --resources '{\"worker\": 8}'` on worker nodes: drivers (and the hosts they start, "
        "which follow their driver) then run there and at most 8 per node")
    max_recorded_chars: int | None = Field(
        1_000_000, ge=1, description="an event's text or reply longer than this is recorded cut to this many "
        "characters, with the original's length and sha256 in text_chars/text_sha256 (reply_chars/reply_sha256); "
        "null records every text whole (memory then grows with reply size)")
    event_flush_bytes: int = Field(
        16 * 2**20, ge=1, description="a run's driver sends its pending events to the recorder once their text "
        "reaches this many bytes (estimated), besides every 10 rounds: a run's event memory is bounded by size")

    @field_validator("token_counter")
    @classmethod
    def _known_counter(cls, value: str) -> str:
        return check_spec(value)

    @model_validator(mode="after")
    def _packing_needs_components_in_the_driver(self) -> ExecutionSettings:
        if (self.runs_per_driver or 1) > 1 and self.components == "actors":
            raise ValueError(f"execution.runs_per_driver={self.runs_per_driver} needs execution.components=driver "
                             "(runs sharing a driver process cannot each borrow that process's warm hosts)")
        return self

    def resolved(self, schedule: str) -> ExecutionSettings:
        """`components`, `runs_per_driver` and `status_actor_after_s` as they apply to a task of
        this schedule (auto and null resolved; explicit values kept), as the schedule declares
        (`Scheduler.placement`, `Scheduler.packs_in_driver`): a schedule placed in the driver
        packs four runs a process and has no status actors; elsewhere actors and a status actor
        30 s in. Placement only: no run id changes."""
        from masgrid._private.platform.run.schedulers import scheduler_class

        steps = scheduler_class(schedule)
        components, per_driver = self.components, self.runs_per_driver
        if components == "auto":
            if steps.placement == "driver" or ((per_driver or 1) > 1 and steps.packs_in_driver):
                components = "driver"
            elif (per_driver or 1) > 1:
                raise ValueError(f"execution.runs_per_driver={per_driver}: the {schedule} schedule runs its "
                                 "components as actors (execution.components=auto: its environment works while agents "
                                 "call); set execution.components=driver to pack its runs anyway")
            else:
                components = "actors"
        if per_driver is None:
            per_driver = AUTO_RUNS_PER_DRIVER if components == "driver" and steps.placement == "driver" else 1
        status_after = self.status_actor_after_s
        if status_after == "auto":
            status_after = STATUS_ACTOR_AFTER_S if per_driver == 1 else None
        if (components, per_driver, status_after) == (self.components, self.runs_per_driver,
                                                      self.status_actor_after_s):
            return self
        return self.model_copy(update={"components": components, "runs_per_driver": per_driver,
                                       "status_actor_after_s": status_after})


#: runs per driver process that execution.runs_per_driver=null gives sequential runs with their
#: components in the driver (benchmarks/results/engine_throughput.md: 0.98-1.01 of the engine at 8-32
#: runs in flight, against 0.82-0.94 with a process per run)
AUTO_RUNS_PER_DRIVER = 4
#: when a run that has its driver process to itself gets its named status actor (run_status_actor.py)
STATUS_ACTOR_AFTER_S = 30.0


#: the family option blocks of RunConfig (each named after its family, Family.options)
FAMILY_BLOCKS = tuple(name for name, family in families().items() if family.options is not None)


def _top_level_keys_into_blocks(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """`mode=desc` is `masbench.mode=desc`: a family's option a config may give at the top
    level (`Family.top_level`) moves into its block; given both ways, the two must agree."""
    owners = {key: family for key, family in top_level_keys().items() if key in data}
    if not owners:
        return data
    data = dict(data)
    for key, family in owners.items():
        block = data.get(family.name)
        if isinstance(block, BaseModel):  # an options object, e.g. built in Python
            block = block.model_dump(exclude_unset=True)  # its defaults are filled in again
        block = dict(block) if isinstance(block, Mapping) else {} if block is None else block
        if not isinstance(block, dict):
            continue  # left as given: the block's own validation and extra="forbid" name both
        value = data.pop(key)
        if key in block and block[key] != value:
            raise ValueError(f"{key}: given as {key}={value!r} and as {family.name}.{key}={block[key]!r}; "
                             f"set it once")
        block[key] = value
        data[family.name] = block
    return data


def _family_default_protocol(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A null or absent protocol: the task's family default (`Family.default_protocol`), else
    the field's own default."""
    if data.get("protocol") is None:
        family = family_of(str(data.get("task") or default_task()))
        if family is not None and family.default_protocol is not None:
            return {**data, "protocol": family.default_protocol}
        return {key: value for key, value in data.items() if key != "protocol"}
    return data


def _agents_from_family_options(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """`agents` as the task derives it from its family's options (`Task.resolve_agents`; CooperBench:
    one per feature), computed on the input so that the field is validated with its final value.
    An unknown task or an invalid block is left alone: their fields' own validation names them."""
    name = data.get("task") or default_task()
    family = family_of(str(name))
    if family is None or family.options is None:
        return data
    try:
        task = get_task(str(name))
        if type(task).resolve_agents is Task.resolve_agents:
            return data  # `agents` as configured: no need to validate the block twice
        block = data.get(family.name)
        options = block if isinstance(block, family.options) else family.options.model_validate(block or {})
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return data
    given = data.get("agents", _RunConfigBase.model_fields["agents"].default)
    if isinstance(given, str) and given.strip().isdigit():
        given = int(given)  # as the field's own (lax) validation reads it
    if isinstance(given, bool) or not isinstance(given, int):
        return data  # the field's validation names a malformed value
    agents = task.resolve_agents(given, **options.model_dump())
    return data if agents == given else {**data, "agents": agents}


class _RunConfigBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(default_factory=lambda: default_task(), description="null or absent: the first task of the "
                      "first family in report order (conf/config.yaml names its own)")
    protocol: str = Field("broadcast", description="null or absent: the task's family default (Family.default_protocol)")
    agents: int = Field(5, ge=1, le=100_000)
    k: int | None = Field(None, ge=1, le=1_000_000, validate_default=True,
                          description="per-agent workload; null: the task's default_k")
    condition: str = "base"
    backend: Literal["scripted", "openai", "serve"] = "scripted"
    model: BackendSettings = Field(default_factory=BackendSettings)
    seed: int = Field(0, ge=-(2**63), lt=2**63, description="instance seed (a 64-bit integer, as the tables store it)")
    results_dir: str = "results"
    max_rounds: int = Field(100, ge=1, description="R_max, per phase")
    topology: TopologySettings = Field(default_factory=TopologySettings,
                                       description="the communication graph of the p2p and broadcast protocols "
                                                   "(docs/topology.md); complete: every agent reaches every other")
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings, validate_default=True,
                                         description="auto settings come resolved for the task's schedule")
    experiment: str | None = Field(None, description="a name for the study, recorded in every table (not identity)")
    tags: list[str] = Field(default_factory=list, description="free labels recorded in every table (not identity)")
    validity: ValiditySettings = Field(default_factory=ValiditySettings)
    preflight: bool = Field(True, description="check the model endpoint once before any actor starts "
                                              "(masgrid/_private/platform/sweeps/preflight.py); never part of the identity")
    team: TeamSettings = Field(default_factory=TeamSettings, description="per-agent models (docs/team.md); "
                               "unset: every agent runs `model`")
    channel: ChannelSettings = Field(default_factory=ChannelSettings,
                                     description="unreliable delivery: loss, delay, duplication, reordering per "
                                                 "message (docs/channel.md); all zero: perfect delivery")
    #: prompt fingerprints computed where the run was planned; they travel (pickled) with the
    #: config to the driver, so the run id never depends on the node that executes it
    _prompt_hashes: dict[str, str] = PrivateAttr(default_factory=dict)
    _counter: CounterChoice | None = PrivateAttr(None)
    #: the resolved team (members' settings, each agent's member), None without one
    _team: Team | None = PrivateAttr(None)
    #: set by the sweep (sweep_execution.py) once it has reset the prefix cache of every engine
    #: the run calls, right before starting it (execution.prefix_cache=reset_per_run)
    _prefix_cache_reset: bool = PrivateAttr(False)

    @model_validator(mode="before")
    @classmethod
    def _input_forms(cls, data: Any) -> Any:
        """Step 1, on the input as given, in this order (each step reads the previous one's result)."""
        if not isinstance(data, Mapping):
            return data
        return _agents_from_family_options(_family_default_protocol(_top_level_keys_into_blocks(data)))

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        if value not in PROTOCOLS:
            raise ValueError(f"unknown protocol {value!r}; choose one of {sorted(PROTOCOLS)}")
        return value

    @field_validator("agents", "k", "seed", "max_rounds", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        # pydantic takes true/false for 1/0; a boolean seed or size is a slip, not a choice
        if isinstance(value, bool):
            raise ValueError(f"a whole number, not {str(value).lower()}")
        return value

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        get_task(value)  # raises ValueError naming the known tasks
        return value

    @field_validator("k")
    @classmethod
    def _task_default_k(cls, value: int | None, info: ValidationInfo) -> int | None:
        """Step 2: null K is the task's default_k (`task` is validated before `k`)."""
        if value is None and "task" in info.data:
            return get_task(info.data["task"]).default_k
        return value

    @field_validator("execution")
    @classmethod
    def _placed_as_the_schedule_runs(cls, value: ExecutionSettings, info: ValidationInfo) -> ExecutionSettings:
        """Step 2: execution.components=auto, runs_per_driver=null and status_actor_after_s=auto
        as the task's schedule places its runs (placement only: no run id changes)."""
        if "task" not in info.data:
            return value
        try:
            return value.resolved(get_task(info.data["task"]).schedule)
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix("execution.")) from None

    @model_validator(mode="after")
    def _consistent_across_fields(self) -> Self:
        """Step 3: checks that read several fields; none of them assigns a field."""
        task = get_task(self.task)
        task.validate_params(self.agents, self.k_resolved, self.protocol, self.condition)
        task.validate_options(self.agents, self.k_resolved, self.seed, **self.generation_kwargs())
        if self.channel.active:
            if not get_protocol(self.protocol).channel_support:
                raise ValueError(f"channel: protocol {self.protocol} does not route its messages through the "
                                 f"channel; set every channel rate to 0 or use a protocol that does (docs/channel.md)")
            self.channel.check_agents(self.agents)
        if self.condition in task.scripted_only_conditions and self.backend != "scripted":
            raise ValueError(f"condition: {self.condition} is a scripted baseline of {self.task}; run it with "
                             f"model=scripted, not backend={self.backend}")
        if self.topology.restricted:
            from masgrid._private.envs.topology import check_topology

            check_topology(self.topology, task, self.protocol, self.agents, self.seed, self.max_rounds, self.backend,
                           self.condition)
        if self.team.active:  # each member's preset resolved and checked (kept: derived data, not a field);
            # the `model` group is not used by agents
            self._team = resolve_team(self.team, self.agents, self.backend, self.seed, graph=self.placement_graph)
        elif self.backend == "openai" and not self.model.base_url:
            raise ValueError(f"model.base_url: backend=openai needs an endpoint, model preset {self.model.name!r} has none")
        scoring = task.scoring_model(**self.generation_kwargs())
        if scoring is not None:  # e.g. cooper.resolver=llm: its model must be reachable (one line if not)
            from masgrid._private.platform.run.scoring_model import scoring_settings

            scoring_settings(scoring, self.backend, self.model)
        if self.backend == "serve" and not self.team.active:
            from masgrid._private.actors.serving.spec import parse_serving

            parse_serving(self.model.serving)  # ServingError (a ValueError) names model.serving.<key>
        return self

    def placement_graph(self, instance: Instance | None = None) -> Any:
        """The communication graph that placement by position reads (team.placement by_degree,
        leaves): the restricted topology or the task's own graph; None on the complete graph,
        where every agent has the same degree and such a placement means nothing."""
        from masgrid._private.envs.topology import run_edges

        instance = instance or self.instance()
        if run_edges(self.topology, self.seed, get_task(self.task), instance) is None:
            return None
        return self.communication_graph(instance)

    @property
    def team_resolved(self) -> Team | None:
        """The resolved team: each member's settings and backend, each agent's member (None: no team)."""
        return self._team

    def agent_endpoints(self) -> list[BackendSettings]:
        """The distinct model settings the run's agents call, one per (endpoint, served model):
        the `model` group's, or each model member's of a team; none for scripted agents."""
        if self._team is None:
            return [] if self.backend == "scripted" else [self.model]
        seen: dict[tuple[str, str], BackendSettings] = {}
        for m in self._team.model_members():
            seen.setdefault((m.settings.base_url or f"serve:{m.settings.name}", m.settings.request_model), m.settings)
        return list(seen.values())

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        """Validate, turning pydantic's report into one readable error naming the fields."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc)) from None

    def identity(self) -> dict[str, Any]:
        """What determines a run's result: the task setting, the model and its sampling, and
        the rendered prompts (`prompt_hash`); not where or how it executes, nor the keys its
        task ignores (`Task.ignored_keys`, None here)."""
        data = self.model_dump(mode="json", exclude=set(NON_IDENTITY))
        task = get_task(self.task)
        for key, owner in top_level_keys().items():  # at the top, where they were before they moved
            data[key] = data[owner.name].pop(key)
        for family in FAMILY_BLOCKS:  # another family's option block is not part of a run's identity
            if family != task.family:
                data.pop(family)
        if data.get(task.family) == {}:  # a block of top-level keys only: absent, as before it existed
            data.pop(task.family)
        elif isinstance(data.get(task.family), dict):
            data[task.family] = task.identity_options(data[task.family])
        for key in task.ignored_keys:  # e.g. SILO's mode: runs differing only there are one run
            data[key] = None
        if not self.channel.active:  # perfect delivery: absent, so every earlier run id stays
            data.pop("channel")
        data["model"] = {k: getattr(self.model, k) for k in _MODEL_IDENTITY}
        if self.model.tool_mode != "native":  # how tools reach the model; only then, so older run ids stay
            data["model"]["tool_mode"] = self.model.tool_mode
        if self.model.tool_constraint != "none":  # forced tool calls change every reply; only then, as above
            data["model"]["tool_constraint"] = self.model.tool_constraint
        if self._team is not None:  # only then, so every run without a team keeps its id
            data["team"] = team_mod.identity(self.team, self._team)
        topology = self.topology.identity()  # the complete graph is absent, so older run ids stay
        if topology is None:
            data.pop("topology")
        else:
            data["topology"] = topology
        data["prompt_hash"] = self._prompt_hash(data)
        return data

    def _prompt_hash(self, data: dict[str, Any]) -> str:
        key = json.dumps(data, sort_keys=True, separators=(",", ":"))
        value = self._prompt_hashes.get(key) or _PROMPT_HASHES.get(key)
        if value is None:
            value = _PROMPT_HASHES[key] = self.render_prompt_hash()
        self._prompt_hashes[key] = value
        return value

    def render_prompt_hash(self) -> str:
        """The fingerprint of the prompts as this process renders them (envs/tasks/fingerprint.py)."""
        from masgrid._private.envs.tasks.fingerprint import prompt_hash

        return prompt_hash(get_task(self.task), self.instance(), self.protocol, self.condition)

    def first_messages(self) -> list[dict[str, str]]:
        """The run's longest first prompt (system message and opening), as an agent receives it."""
        from masgrid._private.envs.tasks.fingerprint import first_messages

        return first_messages(get_task(self.task), self.instance(), self.protocol, self.condition)

    def instance(self) -> Instance:
        """The run's instance: the task's generator on this config, with the communication graph's
        neighbour lists when `topology` restricts it (envs/topology.py)."""
        from masgrid._private.envs.topology import with_topology

        task = get_task(self.task)
        generated = task.generate(self.agents, self.k_resolved, self.seed, **self.generation_kwargs())
        return with_topology(generated, self.topology, self.seed)

    def communication_graph(self, instance: Instance | None = None) -> nx.Graph:
        """The run's communication graph (networkx, node i = agent i): the restricted `topology`,
        else the task's own graph (AgentsNet's model), else complete. `instance`: the run's, when
        the caller has it (else it is generated). The one function other code asks for a run's
        graph (placement by degree, ...)."""
        from masgrid._private.envs.topology import communication_graph

        return communication_graph(self.topology, self.seed, get_task(self.task), instance or self.instance())

    @property
    def k_resolved(self) -> int:
        """K after validation (the task's default_k when the config left it null)."""
        return self.k if self.k is not None else get_task(self.task).default_k

    @property
    def prompt_hash(self) -> str:
        return self.identity()["prompt_hash"]

    @property
    def point_id(self) -> str:
        """The grid point without its prompt version: runs of one point recorded before and
        after a prompt edit share it, so analysis can keep only the newest prompts."""
        data = self.identity()
        data.pop("prompt_hash")
        return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]

    def generation_kwargs(self) -> dict[str, Any]:
        """Keywords the task's generator takes beyond agents/k/seed: its family's options, and
        the run-config keys it asks for (`Task.generation_keys`)."""
        task = get_task(self.task)
        extras: dict[str, Any] = {key: getattr(self, key) for key in task.generation_keys}
        options = getattr(self, task.family, None)  # a family's own option block, e.g. `agentsnet:`
        if isinstance(options, BaseModel):
            extras.update(options.model_dump())
        return extras

    def columns(self) -> dict[str, Any]:
        """The run's identifying and provenance columns, shared by the three tables' rows."""
        from masgrid._private.platform.run.provenance import code_provenance

        m = self.model
        return {"run_id": self.run_id, "task": self.task, "protocol": self.protocol, "agents": self.agents,
                "k": self.k, "condition": self.condition, "backend": self.backend,
                "model": m.request_model, "model_preset": m.name, "temperature": m.temperature, "top_p": m.top_p,
                "max_tokens": m.max_tokens, "sampling_seed": m.seed,
                "sampling_vs_paper": compare_with_paper(m.paper_sampling, m.model_dump()),
                **self._counter_columns(), "prompt_hash": self.prompt_hash,
                "point_id": self.point_id,
                "seed": self.seed, "max_rounds": self.max_rounds, **self.channel_columns(),
                "topology": self._topology_column(),
                "results_dir": self.results_dir, **self.labels(), **code_provenance(),
                "config_json": json.dumps(self.model_dump(mode="json"), sort_keys=True),
                **self._top_level_columns(), **self._ignored_columns(), **self._team_columns(),
                "prefix_cache_reset": self._prefix_cache_reset if self.agent_endpoints() else None}

    def mark_prefix_cache_reset(self, value: bool = True) -> None:
        """Record that the run starts on a freshly reset prefix cache (runs column prefix_cache_reset)."""
        self._prefix_cache_reset = value

    def _team_columns(self) -> dict[str, Any]:
        """A team run: its composition stands as the run's model (tables group by it), the
        sampling columns are null (each member's are in `team_members`)."""
        team = self._team
        if team is None:
            return {"team_composition": None, "team_placement": None, "team_strong": None, "team_members": None}
        label = composition_string(team.agents)
        return {"model": label, "model_preset": label, "temperature": None, "top_p": None, "max_tokens": None,
                "sampling_seed": None, "sampling_vs_paper": None, "team_composition": label,
                "team_placement": team.placement, "team_strong": team.strong,
                "team_members": json.dumps({name: m.record() for name, m in sorted(team.members.items())},
                                           sort_keys=True)}

    def channel_columns(self) -> dict[str, Any]:
        """The channel's settings as runs columns; null when it is off (docs/channel.md)."""
        on = self.channel.active
        out: dict[str, Any] = {f"channel_{r}": getattr(self.channel, r) if on else None for r in RATES}
        out["channel_delay_rounds"] = self.channel.delay_rounds if on else None
        out["channel_links"] = json.dumps({k: v.model_dump(exclude_none=True) for k, v in self.channel.links.items()},
                                          sort_keys=True) if on and self.channel.links else None
        return out

    def _topology_column(self) -> str | None:
        """topology.kind; null for a task that runs on its own graph (AgentsNet's `graph` model)."""
        if not self.topology.restricted and get_task(self.task).topology_need == "builds":
            return None
        return self.topology.kind

    def _top_level_columns(self) -> dict[str, Any]:
        """Each family's top-level option as its runs column (`Family.top_level`, e.g. MAS-Bench's
        mode): the value its block holds, as the column held before the option moved there."""
        return {key: getattr(getattr(self, owner.name), key) for key, owner in top_level_keys().items()}

    def _ignored_columns(self) -> dict[str, Any]:
        """The keys a task ignores, as null in its rows when the task asks (`Task.null_ignored_columns`,
        e.g. CooperBench's k and mode); config_json keeps what was configured."""
        task = get_task(self.task)
        columns = ("k", *top_level_keys())
        return {key: None for key in task.ignored_keys if key in columns} if task.null_ignored_columns else {}

    def _counter_columns(self) -> dict[str, Any]:
        try:
            counter = self.token_counting()
        except ValueError as exc:  # a failed run's row: the requested tokenizer could not be loaded
            return {"token_counter": self.execution.token_counter, "token_counter_source": f"error: {exc}",
                    "tokenizer_sha256": None}
        return {"token_counter": counter.spec, "token_counter_source": counter.source,
                "tokenizer_sha256": counter.sha256}

    def token_counting(self) -> CounterChoice:
        """The token counter this run uses (envs/tokens.py), resolved once where it is first
        asked for (the driver: the tokenizer file must exist on the node that counts)."""
        if self._counter is None:
            tokenizer, name = self.model.tokenizer, self.model.name
            if self._team is not None:  # a tokenizer the team's model members share, else approx (recorded)
                specs = {m.settings.tokenizer for m in self._team.model_members()}
                tokenizer = specs.pop() if len(specs) == 1 else None
                name = f"team {composition_string(self._team.agents)}" + (
                    " (members' tokenizers differ)" if len(specs) else "")
            self._counter = resolve_counter(self.execution.token_counter, tokenizer, name)
        return self._counter

    def labels(self) -> dict[str, Any]:
        """The filing labels every row of every table carries."""
        return {"experiment": self.experiment, "tags": list(self.tags)}

    @property
    def partition(self) -> dict[str, str]:
        return {"task": self.task, "protocol": self.protocol}

    @property
    def run_id(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _run_config_class() -> type[_RunConfigBase]:
    """RunConfig: the shared fields plus one option block per installed family that has options
    (`simas:`, `agentsnet:`, ...), each validated by the family's own model with extra="forbid"."""
    blocks: dict[str, Any] = {
        name: (family.options, Field(default_factory=family.options, description=f"{family.label} options"))
        for name, family in families().items() if family.options is not None}
    taken = sorted(set(blocks) & set(_RunConfigBase.model_fields))
    if taken:
        from masgrid.family import FamilyError

        raise FamilyError(f"family option block(s) {', '.join(taken)} would replace RunConfig's own field of "
                          "that name: rename the family")
    return create_model("RunConfig", __base__=_RunConfigBase, __module__=__name__, **blocks)


if TYPE_CHECKING:
    import networkx as nx

    class RunConfig(_RunConfigBase):
        """The validated run configuration (family option blocks are added at import)."""

        def __getattr__(self, name: str) -> Any: ...
else:
    RunConfig = _run_config_class()
    RunConfig.__doc__ = "The validated run configuration: shared fields and each family's option block."


class ConfigError(ValueError):
    """Invalid configuration; the message names every offending field."""


def format_validation_error(exc: ValidationError) -> str:
    lines = ["invalid configuration:"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        msg = err["msg"].removeprefix("Value error, ")
        if ":" in msg and not err["loc"]:
            loc, _, msg = msg.partition(": ")
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)
