"""Model phases: which models a sweep deploys together, in which order, and which runs each
phase serves (docs/model-phases.md).

Every pending run needs a set of managed models (one; a mixed-model team all its members at
once; none for scripted agents or endpoints someone else runs, `model.base_url`). Phases are
sets of models that fit on the cluster together. They are built greedily: the largest model
sets (teams) first, each joining the phase it shares most models with where the union still
fits, else opening a new phase; the phases are then ordered so that each shares as many
models as it can with the one before, since a model kept from one phase to the next is not
loaded again. A run belongs to the first phase holding all it needs. A model that cannot fit
on the cluster even alone, or a team that cannot fit at once, is refused before anything
starts, with the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Sequence

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.model_phases.capacity import Cluster, Placement, bundles_of, fits, place, place_group
from masgrid._private.platform.sweeps.model_phases.demand import ModelDemand, demand_of


class PhasePlanError(ValueError):
    """A sweep whose models cannot be deployed on this cluster: one line with the numbers."""


@dataclass
class Phase:
    index: int
    models: list[str]  # apps, in load order
    replicas: dict[str, int] = field(default_factory=dict)  # app -> replicas while loaded
    loads: list[str] = field(default_factory=list)  # apps deployed when the phase starts
    keeps: list[str] = field(default_factory=list)  # apps kept from the phase before
    releases: list[str] = field(default_factory=list)  # apps released when it starts
    sleeps: list[str] = field(default_factory=list)  # apps put to sleep when it starts (release: sleep)
    wakes: list[str] = field(default_factory=list)  # sleeping apps woken for it
    asleep: list[str] = field(default_factory=list)  # apps asleep during it (they keep their Ray resources)
    runs: list[RunConfig] = field(default_factory=list)
    placement: Placement | None = None


@dataclass
class PhasePlan:
    phases: list[Phase]
    demands: dict[str, ModelDemand]  # app -> demand
    cluster: Cluster
    needs: dict[str, frozenset[str]]  # run_id -> apps it needs

    @property
    def loads(self) -> int:
        return sum(len(p.loads) for p in self.phases)

    def rows(self) -> list[dict[str, Any]]:
        """One row per phase, for printing (`masgrid run -m ... --plan`) and the phases table."""
        out = []
        for p in self.phases:
            out.append({"phase": p.index, "models": [self.demands[a].name for a in p.models],
                        "replicas": {self.demands[a].name: p.replicas[a] for a in p.models},
                        "loads": [self.demands[a].name for a in p.loads],
                        "keeps": [self.demands[a].name for a in p.keeps],
                        "releases": [self.demands[a].name for a in p.releases],
                        "sleeps": [self.demands[a].name for a in p.sleeps],
                        "wakes": [self.demands[a].name for a in p.wakes], "runs": len(p.runs)})
        return out

    def text(self) -> str:
        lines = [f"model phases: {len(self.phases)} phase(s), {self.loads} model load(s), "
                 f"{sum(len(p.runs) for p in self.phases)} pending run(s); cluster: {self.cluster.describe()}"]
        for p in self.phases:
            models = ", ".join(f"{self.demands[a].name} x{p.replicas[a]}" for a in p.models) or "no managed model"
            moves = []
            if p.releases:
                moves.append("release " + ", ".join(self.demands[a].name for a in p.releases))
            if p.sleeps:
                moves.append("put to sleep " + ", ".join(self.demands[a].name for a in p.sleeps))
            if p.wakes:
                moves.append("wake " + ", ".join(self.demands[a].name for a in p.wakes))
            if p.loads:
                moves.append("load " + ", ".join(self.demands[a].name for a in p.loads))
            if p.keeps:
                moves.append("keep " + ", ".join(self.demands[a].name for a in p.keeps))
            lines.append(f"  phase {p.index}: {models} ({'; '.join(moves) or 'nothing to load'}); "
                         f"{len(p.runs)} run(s)")
            for app in p.models:
                lines.append(f"    {self.demands[app].describe(p.replicas[app])}")
        return "\n".join(lines)


def managed_models(cfg: RunConfig) -> list[ModelDemand]:
    """The models a run needs that a sweep deploys itself (Serve apps without a base_url)."""
    return [demand_of(s) for s in cfg.agent_endpoints() if not s.base_url]


def plan_phases(cfgs: Sequence[RunConfig], cluster: Cluster, deployed: Sequence[str] = ()) -> PhasePlan:
    """Phases for the pending runs `cfgs` on `cluster` (its free capacity); `deployed`: managed
    apps already up (a phase starting with them loads nothing more)."""
    demands: dict[str, ModelDemand] = {}
    needs: dict[str, frozenset[str]] = {}
    groups: dict[frozenset[str], list[RunConfig]] = {}
    for cfg in cfgs:
        apps = []
        for demand in managed_models(cfg):
            known = demands.setdefault(demand.app, demand)
            if known.fingerprint != demand.fingerprint:
                raise PhasePlanError(f"models {known.name} and {demand.name} both deploy as Serve app {demand.app!r} "
                                     "with different settings; give each preset its own model.serving.app")
            apps.append(demand.app)
        need = frozenset(apps)
        needs[cfg.run_id] = need
        groups.setdefault(need, []).append(cfg)
    _check_each_fits(cluster, demands, groups)
    phases_sets: list[set[str]] = []
    for need in sorted((g for g in groups if g), key=lambda g: (-len(g), sorted(g))):
        if any(need <= s for s in phases_sets):
            continue
        best = None
        for s in sorted(phases_sets, key=lambda s: -len(s & need)):
            union = s | need
            if fits(cluster, ((demands[a], demands[a].replicas or 1) for a in union)):
                best = s
                break
        if best is None:
            phases_sets.append(set(need))
        else:
            best |= need
    ordered = _order(phases_sets, set(deployed))
    phases = _build(ordered, demands, cluster, set(deployed))
    for need, runs in groups.items():  # a run goes to the first phase holding all it needs
        target = next((p for p in phases if need <= set(p.models)), None)
        if target is None:  # only the model-less runs when no phase exists
            target = Phase(index=1, models=[])
            phases.append(target)
        target.runs.extend(runs)
    return PhasePlan(phases=phases, demands=demands, cluster=cluster, needs=needs)


def _check_each_fits(cluster: Cluster, demands: dict[str, ModelDemand],
                     groups: dict[frozenset[str], list[RunConfig]]) -> None:
    for _app, demand in sorted(demands.items()):
        if not fits(cluster, [(demand, demand.replicas or 1)]):
            raise PhasePlanError(f"model {demand.name} cannot be deployed on this cluster: it needs "
                                 f"{demand.describe(demand.replicas or 1)}, and the cluster has {cluster.describe()}")
    for need in groups:
        if len(need) > 1 and not fits(cluster, ((demands[a], demands[a].replicas or 1) for a in need)):
            members = [demands[a] for a in sorted(need)]
            raise PhasePlanError(
                f"a team needs {', '.join(d.name for d in members)} deployed at once ("
                + "; ".join(d.describe(d.replicas or 1) for d in members)
                + f"), which does not fit on the cluster: {cluster.describe()}")


def _order(sets: list[set[str]], deployed: set[str]) -> list[set[str]]:
    """Each phase next to the one it shares most models with, starting from what is up."""
    left = list(sets)
    out: list[set[str]] = []
    current = deployed
    while left:
        nxt = max(left, key=lambda s: (len(s & current), -left.index(s)))
        left.remove(nxt)
        out.append(nxt)
        current = nxt
    return out


def _build(sets: list[set[str]], demands: dict[str, ModelDemand], cluster: Cluster,
           deployed: set[str]) -> list[Phase]:
    """Phases with their loads, keeps, releases and replica counts: a kept model keeps its
    replicas; replicas=auto models loaded in a phase share what the phase leaves free. A model
    whose preset says `release: sleep` is put to sleep instead of released, and still holds
    its Ray resources while asleep (a sleeping Serve replica keeps its placement group); where
    the next phase does not fit beside the sleeping models, they are released after all."""
    phases: list[Phase] = []
    up: dict[str, int] = {}  # app -> replicas while loaded (deployed apps: unknown, counted as 1)
    asleep: dict[str, int] = {}
    for app in deployed:
        if app in demands:
            up[app] = demands[app].replicas or 1
    for i, models in enumerate(sets, start=1):
        wakes = sorted(a for a in models if a in asleep)
        keeps = sorted(a for a in models if a in up or a in asleep)
        loads = sorted((a for a in models if a not in up and a not in asleep), key=lambda a: demands[a].name)
        leaving = {a: n for a, n in {**up, **asleep}.items() if a not in models}
        sleepers = {a: n for a, n in leaving.items() if demands[a].release == "sleep"}
        replicas = {a: up.get(a, asleep.get(a, 1)) for a in keeps}
        for app in loads:
            replicas[app] = demands[app].replicas or 1
        trial = cluster.copy()
        placement = place(trial, [(demands[a], replicas[a], True) for a in sorted(models)]
                          + [(demands[a], n, False) for a, n in sorted(sleepers.items())])
        if placement is None and sleepers:  # no room beside the sleeping models: release them
            sleepers = {}
            trial = cluster.copy()
            placement = place(trial, [(demands[a], replicas[a]) for a in sorted(models)])
        if placement is not None:
            _fill(trial, placement, [demands[a] for a in loads if demands[a].replicas is None], replicas)
        phases.append(Phase(index=i, models=keeps + loads, replicas=replicas, loads=loads, keeps=keeps,
                            releases=sorted(a for a in leaving if a not in sleepers),
                            sleeps=sorted(a for a in sleepers if a not in asleep), wakes=wakes,
                            asleep=sorted(sleepers), placement=placement))
        up, asleep = dict(replicas), dict(sleepers)
    return phases


def _fill(cluster: Cluster, placement: Placement, auto: list[ModelDemand], replicas: dict[str, int]) -> None:
    """Add replicas of the auto models in turn while the free capacity holds one more."""
    growing = [d for d in auto if replicas[d.app] < d.auto_max]
    while growing:
        for demand in list(growing):
            nodes = place_group(cluster, bundles_of(demand), demand.strategy)
            if nodes is None:
                growing.remove(demand)
                continue
            for i, node_id in enumerate(nodes):
                placement.bundles[(demand.app, replicas[demand.app], i)] = node_id
            replicas[demand.app] += 1
            if replicas[demand.app] >= demand.auto_max:
                growing.remove(demand)
