"""Mixed-model teams: which model each agent of a run talks to (docs/team.md).

The `team` block of a run names its members (model presets under conf/model, `scripted` for
the task's classical policy, or aliases defined in `team.presets`) either one per agent
(`team.models`) or as counts (`team.composition`) placed on the agents by a seeded draw or by
graph position (`team.placement`). Everything is resolved while the configuration is
validated, before Ray starts: each member into full `BackendSettings`, each agent into its
member. `place` is the placement itself, a pure function of a networkx graph (or none).
"""

from __future__ import annotations

import json
import logging
import random
import re
from pathlib import Path
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.resources import conf_file, conf_files, on_reload

if TYPE_CHECKING:
    import networkx as nx

log = logging.getLogger(__name__)

PLACEMENTS = ("random", "by_degree", "leaves")
#: placements that read the run's communication graph
GRAPH_PLACEMENTS = ("by_degree", "leaves")
#: the count that means "every agent no other entry takes"
REST = "rest"
#: the member name whose agents run the task's classical policy
SCRIPTED = "scripted"
#: one term of the string form of a composition: `2xtiny_cpu`, `rest*standin`, `3×scripted`
_TERM = re.compile(r"^\s*(\d+|rest)\s*[x×*]\s*([A-Za-z0-9_.\-]+)\s*$")
#: BackendSettings fields that change what a model answers (RunConfig's model identity)
MODEL_IDENTITY = ("name", "served_name", "temperature", "top_p", "max_tokens", "seed", "extra_body")

_PRESETS: dict[str, dict[str, Any]] = {}
on_reload(_PRESETS.clear)


class TeamSettings(BaseModel):
    """The `team` block. Neither `models` nor `composition` set: no team, every agent runs `model`."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] | None = Field(
        None, description="one member per agent, in agent order (agent i runs models[i]); placement is not used")
    composition: dict[str, Any] | list[Any] | str | None = Field(
        None, description="counts per member: {tiny_cpu: 2, rest: standin}, [{model: tiny_cpu, count: 2}, "
        "{model: standin, count: rest}] or '2xtiny_cpu+restxstandin'; the entries with counts take "
        "positions first, in the order written (the first is the 'strong' member placement puts first)")
    placement: Literal["random", "by_degree", "leaves"] = Field(
        "random", description="how a composition is laid on the agents: a seeded random draw, the first "
        "entry on the highest-degree nodes of the run's graph, or on its lowest-degree nodes (leaves first)")
    seed: int | None = Field(None, description="seed of the placement draw (ties, random); null: the run's seed")
    presets: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="member name -> {preset: <conf/model name, default the member name>, "
        "backend: <openai|serve, default the run's>, <model settings overriding the preset's>}: two members may "
        "share a preset with other settings")

    @field_validator("models")
    @classmethod
    def _nonempty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("an empty list; give one member per agent, or leave team.models null")
        return value

    @property
    def active(self) -> bool:
        return self.models is not None or self.composition is not None

    def parts(self) -> list[tuple[str, int | None]]:
        """The composition as (member, count) in the order written; count None: the rest."""
        return parse_composition(self.composition)


@dataclass(frozen=True)
class Member:
    """One distinct model of a team: the backend its agents use and its full settings."""

    name: str
    backend: str
    settings: BackendSettings

    @property
    def scripted(self) -> bool:
        return self.backend == "scripted"

    def record(self) -> dict[str, Any]:
        """What the runs row (`team_members`) keeps of it: enough to tell members apart and reach them."""
        s = self.settings
        row: dict[str, Any] = {"backend": self.backend, "preset": s.name, "model": s.request_model,
                               "base_url": s.base_url}
        row.update({k: getattr(s, k) for k in MODEL_IDENTITY if k not in ("name", "served_name")})
        return row


@dataclass(frozen=True)
class Team:
    """A resolved team: its members and the member of each agent."""

    members: dict[str, Member]
    agents: tuple[str, ...]
    placement: str  # random | by_degree | leaves | explicit
    strong: str | None  # the member placed first (compositions), None for an explicit list

    def composition(self) -> str:
        return composition_string(self.agents)

    def model_members(self) -> list[Member]:
        return [m for m in self.members.values() if not m.scripted]


def parse_composition(value: Any) -> list[tuple[str, int | None]]:
    """(member, count or None for the rest) from any accepted form; ValueError names the problem."""
    where = "team.composition"
    if value is None:
        return []
    items: list[tuple[Any, Any]]
    if isinstance(value, str):
        items = []
        for term in value.split("+"):
            match = _TERM.match(term)
            if match is None:
                raise ValueError(f"{where}: {term.strip()!r} is not <count>x<member> (e.g. 2xtiny_cpu+restxscripted)")
            items.append((match.group(2), match.group(1)))
    elif isinstance(value, Mapping):
        items = [(v, REST) if k == REST else (k, v) for k, v in value.items()]
    elif isinstance(value, list):
        items = []
        for entry in value:
            if not isinstance(entry, Mapping) or set(entry) != {"model", "count"}:
                raise ValueError(f"{where}: list entries are {{model: <member>, count: <n or rest>}}, got {entry!r}")
            items.append((entry["model"], entry["count"]))
    else:
        raise ValueError(f"{where}: a mapping, a list or a string, not {type(value).__name__}")
    parts: list[tuple[str, int | None]] = []
    for member, count in items:
        if not isinstance(member, str) or not member:
            raise ValueError(f"{where}: a member is a preset name, not {member!r}")
        if count == REST:
            parts.append((member, None))
            continue
        if isinstance(count, str) and count.isdigit():
            count = int(count)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{where}: the count of {member} must be a whole number >= 0 or 'rest', not {count!r}")
        parts.append((member, count))
    names = [m for m, _ in parts]
    twice = sorted({m for m in names if names.count(m) > 1})
    if twice:
        raise ValueError(f"{where}: {', '.join(twice)} named more than once")
    if sum(c is None for _, c in parts) > 1:
        raise ValueError(f"{where}: only one member can take the rest")
    if not parts:
        raise ValueError(f"{where}: empty; name at least one member")
    return parts


def slots(parts: Sequence[tuple[str, int | None]], n_agents: int) -> list[str]:
    """The members in placement order: each counted entry as often as its count, in the order
    written, then the rest member for every agent left."""
    counted = sum(c for _, c in parts if c is not None)
    rest = [m for m, c in parts if c is None]
    if counted > n_agents:
        raise ValueError(f"team.composition: counts sum to {counted}, the run has {n_agents} agents")
    if not rest and counted != n_agents:
        raise ValueError(f"team.composition: counts sum to {counted} of {n_agents} agents; "
                         f"give the others a member with rest: <preset>")
    out = [m for m, c in parts if c is not None for _ in range(c)]
    return out + rest * (n_agents - counted)


def draw_rank(n_agents: int, seed: int) -> list[int]:
    """rank[i]: agent i's place in the seeded draw (a permutation of 0..n-1): the order of a
    random placement and the tie-break among agents of equal degree."""
    order = list(range(n_agents))
    random.Random(f"masgrid-team:{seed}").shuffle(order)
    rank = [0] * n_agents
    for position, agent in enumerate(order):
        rank[agent] = position
    return rank


def place(slots_in_order: Sequence[str], placement: str, seed: int, graph: nx.Graph | None = None) -> list[str]:
    """The member of each agent (index = agent id). Agents are ordered, then take the slots
    in order: `random` by the seeded draw; `by_degree` by degree in `graph`, highest first;
    `leaves` by degree, lowest first; equal degrees by the seeded draw. The graph's nodes
    are the agent ids 0..n-1."""
    n = len(slots_in_order)
    rank = draw_rank(n, seed)
    if placement == "random":
        order = sorted(range(n), key=rank.__getitem__)
    elif placement in GRAPH_PLACEMENTS:
        if graph is None:
            raise ValueError(f"team.placement: {placement} needs the run's communication graph; this task has none "
                             "(use placement=random or an explicit team.models list)")
        if sorted(graph.nodes) != list(range(n)):
            raise ValueError(f"team.placement: the graph's nodes are not the agents 0..{n - 1}")
        sign = -1 if placement == "by_degree" else 1
        order = sorted(range(n), key=lambda i: (sign * graph.degree(i), rank[i]))
    else:
        raise ValueError(f"team.placement: unknown placement {placement!r}; choose one of {list(PLACEMENTS)}")
    members = [""] * n
    for agent, member in zip(order, slots_in_order):
        members[agent] = member
    return members


def composition_string(agents: Sequence[str]) -> str:
    """Canonical composition: members by count (largest first), then name, e.g. '3×scripted+2×tiny_cpu'."""
    counts = Counter(agents)
    return "+".join(f"{n}×{m}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def preset_names() -> list[str]:
    """Every model preset: conf/model and each family's conf/model (as Hydra's `model=` finds them)."""
    return sorted({Path(rel).stem for rel, _ in conf_files("model") if rel.endswith(".yaml")})


def load_preset(name: str) -> dict[str, Any]:
    """model/<name>.yaml from the config roots, interpolations resolved (as Hydra composes `model=<name>`)."""
    if name not in _PRESETS:
        try:
            path = conf_file(f"model/{name}.yaml") if re.fullmatch(r"[A-Za-z0-9_.\-]+", name) else None
        except FileNotFoundError:
            path = None
        if path is None or not path.is_file():
            raise ValueError(f"team: unknown model preset {name!r}; conf/model has {', '.join(preset_names())}")
        from omegaconf import OmegaConf

        data = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
        _PRESETS[name] = {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}
    return json.loads(json.dumps(_PRESETS[name]))


def _merged(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) else value
    return out


def resolve_member(name: str, team: TeamSettings, run_backend: str) -> Member:
    """A member's backend and full settings: its preset's file with `team.presets.<name>` over it."""
    over = dict(team.presets.get(name, {}))
    preset = over.pop("preset", name)
    backend = over.pop("backend", None)  # this member's own backend; default the run's
    if backend not in (None, "openai", "serve"):
        raise ValueError(f"team.presets.{name}.backend: openai or serve (a model member's backend), not {backend!r}")
    if not isinstance(preset, str):
        raise ValueError(f"team.presets.{name}.preset: a conf/model preset name, not {preset!r}")
    data = _merged(load_preset(preset), over)
    try:
        settings = BackendSettings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"team.presets.{name}{'.' + loc if loc else ''}: "
                         f"{err['msg'].removeprefix('Value error, ')}") from None
    if settings.name == SCRIPTED:
        return Member(name, "scripted", settings)
    kind = backend or run_backend
    if kind == "scripted":
        raise ValueError(f"team: member {name} is a model (preset {preset}); set backend=openai or backend=serve, "
                         f"the backend of the team's model agents (or team.presets.{name}.backend)")
    if kind == "openai" and not settings.base_url:
        raise ValueError(f"team: member {name} (preset {preset}) has no base_url for backend=openai; "
                         f"set team.presets.{name}.base_url")
    if kind == "serve":
        from masgrid._private.actors.serving.spec import parse_serving

        try:
            parse_serving(settings.serving)
        except ValueError as exc:
            raise ValueError(f"team.presets.{name}.serving: {exc}") from None
    return Member(name, kind, settings)


def resolve_team(team: TeamSettings, n_agents: int, run_backend: str, seed: int,
                 graph: Any = None) -> Team:
    """Members and the member of each agent; `graph` is a callable returning the run's
    networkx graph (or None), called only by the graph placements."""
    if team.models is not None and team.composition is not None:
        raise ValueError("team: set team.models (one per agent) or team.composition (counts), not both")
    if team.models is not None:
        if len(team.models) != n_agents:
            raise ValueError(f"team.models: {len(team.models)} members for {n_agents} agents (one per agent)")
        agents, placement, strong = list(team.models), "explicit", None
    else:
        parts = team.parts()
        order = slots(parts, n_agents)
        placement = team.placement
        g = graph() if placement in GRAPH_PLACEMENTS and graph is not None else None
        agents = place(order, placement, seed if team.seed is None else team.seed, g)
        strong = parts[0][0]
    unused = sorted(set(team.presets) - set(agents))
    if unused:  # e.g. a count of 0 in a sweep over counts; never an error
        log.info("team.presets defines members no agent runs: %s", ", ".join(unused))
    members = {name: resolve_member(name, team, run_backend) for name in dict.fromkeys(agents)}
    return Team(members=members, agents=tuple(agents), placement=placement, strong=strong)


def identity(team: TeamSettings, resolved: Team) -> dict[str, Any]:
    """What of a team enters the run's identity: how agents were assigned, and what each member answers with."""
    members = {}
    for name, m in sorted(resolved.members.items()):
        entry: dict[str, Any] = {"backend": m.backend, **{k: getattr(m.settings, k) for k in MODEL_IDENTITY}}
        if m.settings.tool_mode != "native":
            entry["tool_mode"] = m.settings.tool_mode
        if m.settings.tool_constraint != "none":
            entry["tool_constraint"] = m.settings.tool_constraint
        members[name] = entry
    spec: dict[str, Any] = ({"models": list(team.models)} if team.models is not None else
                            {"composition": [[m, c] for m, c in team.parts()], "placement": team.placement})
    spec["seed"] = team.seed
    return {**spec, "members": members}


def strong_position(resolved: Team, graph: nx.Graph | None) -> float | None:
    """Mean degree in the run's graph of the agents running the strong member (null: no graph,
    no composition, or the strong member has no agent)."""
    if graph is None or resolved.strong is None:
        return None
    degrees = [graph.degree(i) for i, m in enumerate(resolved.agents) if m == resolved.strong]
    return sum(degrees) / len(degrees) if degrees else None


def by_member(agents: Sequence[str], stats: Sequence[Any], errors: Mapping[str, Counter[str]],
              members: Mapping[str, Member], validity: Any) -> dict[str, dict[str, Any]]:
    """Per member: agents, model calls, failed calls, error rate, tokens and its own status
    (judged as a run's, on the member's calls alone)."""
    from masgrid._private.platform.run.run_outcome import judge

    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(agents)):
        mine = [s for s, m in zip(stats, agents) if m == name]
        calls = sum(s.model_calls for s in mine)
        failed = sum(s.model_errors for s in mine)
        status, _ = judge(calls, errors.get(name, Counter()), validity)
        tokens_in, tokens_out = sum(s.tokens_in for s in mine), sum(s.tokens_out for s in mine)
        out[name] = {"backend": members[name].backend, "model": members[name].settings.request_model,
                     "agents": len(mine), "model_calls": calls, "model_errors": failed,
                     "model_error_rate": failed / calls if calls else 0.0, "tokens_in": tokens_in,
                     "tokens_out": tokens_out, "tokens_total": tokens_in + tokens_out, "status": status}
    return out


_SEVERITY = {"ok": 0, "degraded": 1, "invalid": 2}


def judge_members(summary: Mapping[str, dict[str, Any]], errors: Mapping[str, Counter[str]],
                  validity: Any) -> tuple[str, str | None]:
    """A team run's status from its members' own statuses (`by_member`): the worst of them;
    the error line names every member with failed calls and its own judgement."""
    from masgrid._private.platform.run.run_outcome import judge

    worst, lines = "ok", []
    for name, row in summary.items():
        status, line = judge(row["model_calls"], errors.get(name, Counter()), validity)
        if _SEVERITY[status] > _SEVERITY[worst]:
            worst = status
        if line is not None:  # judge's line starts with the status: the member's own, in brackets here
            lines.append(f"member {name} ({status}): {line.split(': ', 1)[1]}")
    return worst, (f"{worst}: " + "; ".join(lines) if lines else None)
