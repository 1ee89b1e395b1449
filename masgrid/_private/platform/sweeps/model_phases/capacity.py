"""What a Ray cluster has for models, per node, and whether a set of model replicas fits.

The fit is a first-fit placement of each replica's placement group under its strategy, the
way Ray's scheduler treats them: PACK keeps a group on one node where it can and spills over
nodes otherwise, STRICT_PACK needs one node, SPREAD prefers distinct nodes, STRICT_SPREAD
needs them. It is a plan, not a promise: Ray places the groups itself, and a group it cannot
place leaves the deployment waiting, which the phase's deploy deadline turns into an error.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable, Sequence

from masgrid._private.platform.sweeps.model_phases.demand import ModelDemand, Resources, fmt_resources

log = logging.getLogger(__name__)
_EPS = 1e-9
#: resources a node reports that no model bundle asks for (left out of messages)
_NOISE = ("memory", "object_store_memory", "node:")
#: the resources Ray adds to a node for each placement group placed there (`CPU_group_<pg id>`,
#: `GPU_group_<bundle>_<pg id>`, `bundle_group_...`): what a group holds, which no model bundle asks for
_GROUP_RESOURCE = re.compile(r"_group_(?:\d+_)?[0-9a-f]{20,}$")


@dataclass
class Node:
    node_id: str
    free: Resources  # what models may take here
    label: str = ""  # e.g. the node's address, for messages

    def fits(self, bundle: Resources) -> bool:
        return all(self.free.get(key, 0.0) + _EPS >= amount for key, amount in bundle.items())

    def take(self, bundle: Resources) -> None:
        for key, amount in bundle.items():
            self.free[key] = self.free.get(key, 0.0) - amount


@dataclass
class Cluster:
    nodes: list[Node]
    source: str = "ray"  # ray: measured; preset: a preset's declared `cluster`; explicit: given

    def copy(self) -> Cluster:
        return Cluster([Node(n.node_id, dict(n.free), n.label) for n in self.nodes], self.source)

    def totals(self) -> Resources:
        out: Resources = {}
        for node in self.nodes:
            for key, amount in node.free.items():
                if not key.startswith(_NOISE) and key != "gpu_memory":
                    out[key] = out.get(key, 0.0) + amount
        return out

    def describe(self) -> str:
        per_node = sorted({fmt_resources({k: v for k, v in n.free.items()
                                          if not k.startswith(_NOISE) and k != "gpu_memory"})
                           for n in self.nodes})
        where = {"ray": "free on the cluster", "preset": "declared by the presets' `cluster`",
                 "explicit": "given"}.get(self.source, self.source)
        return (f"{len(self.nodes)} node(s) ({where}): {fmt_resources(self.totals())} in all"
                + (f"; per node {' | '.join(per_node)}" if len(per_node) <= 4 else ""))


@dataclass
class Placement:
    """Where each replica's bundles and each app's ingress went: (app, replica, bundle) -> node id."""

    bundles: dict[tuple[str, int, int], str] = field(default_factory=dict)
    ingress: dict[str, str] = field(default_factory=dict)


#: the memory of a node's GPUs, in GPUs: not a Ray resource, but what awake vLLM engines share
#: (each takes gpu_memory_utilization of every GPU it runs on; a sleeping engine takes none)
GPU_MEMORY = "gpu_memory"


def place(cluster: Cluster, wanted: Iterable[tuple[ModelDemand, int] | tuple[ModelDemand, int, bool]],
          placed: Placement | None = None) -> Placement | None:
    """Place `replicas` replicas of each model (and each app's ingress) on a copy-free
    `cluster` (mutated: what is placed is taken); None when something does not fit. Larger
    groups go first, as a packer would. A third item False: the model is asleep (it holds
    its Ray resources, not its GPU memory)."""
    placed = placed if placed is not None else Placement()
    for each in cluster.nodes:  # GPU memory: as many GPUs' worth as the node has GPUs free for models
        each.free.setdefault(GPU_MEMORY, each.free.get("GPU", 0.0))
    entries = [(w[0], w[1], bool(w[2]) if len(w) > 2 else True) for w in wanted]
    order = sorted(entries, key=lambda w: _weight(w[0]), reverse=True)
    for demand, replicas, awake in order:
        for replica in range(replicas):
            nodes = place_group(cluster, bundles_of(demand, awake), demand.strategy)
            if nodes is None:
                return None
            for i, node_id in enumerate(nodes):
                placed.bundles[(demand.app, replica, i)] = node_id
        if demand.ingress and demand.app not in placed.ingress:
            node = next((n for n in cluster.nodes if n.fits(demand.ingress_resources)), None)
            if node is None:
                return None
            node.take(demand.ingress_resources)
            placed.ingress[demand.app] = node.node_id
    return placed


def fits(cluster: Cluster, wanted: Iterable[tuple[ModelDemand, int]]) -> bool:
    return place(cluster.copy(), wanted) is not None


def bundles_of(demand: ModelDemand, awake: bool = True) -> list[Resources]:
    """One replica's bundles as the fit sees them: Ray's, plus the GPU memory an awake engine takes."""
    out = demand.replica_bundles
    if awake and demand.gpu_memory > 0:
        out = [{**b, GPU_MEMORY: demand.gpu_memory} if b.get("GPU", 0.0) > 0 else b for b in out]
    return out


def place_group(cluster: Cluster, bundles: Sequence[Resources], strategy: str) -> list[str] | None:
    """Node ids of one placement group's bundles, taken from `cluster`; None if it does not fit."""
    if not bundles:
        return []
    total: Resources = {}
    for bundle in bundles:
        for key, amount in bundle.items():
            total[key] = total.get(key, 0.0) + amount
    if strategy in ("PACK", "STRICT_PACK"):
        whole = next((n for n in cluster.nodes if n.fits(total)), None)
        if whole is not None:
            whole.take(total)
            return [whole.node_id] * len(bundles)
        if strategy == "STRICT_PACK":
            return None
    trial = cluster.copy()
    chosen: list[str] = []
    for bundle in bundles:
        if strategy == "PACK":  # fill the node in use first, then the next
            candidates = sorted(trial.nodes, key=lambda n: (n.node_id not in chosen, 0))
        else:  # SPREAD / STRICT_SPREAD: a node not used yet first
            candidates = sorted(trial.nodes, key=lambda n: chosen.count(n.node_id))
        node = next((n for n in candidates if n.fits(bundle)
                     and not (strategy == "STRICT_SPREAD" and n.node_id in chosen)), None)
        if node is None:
            return None
        node.take(bundle)
        chosen.append(node.node_id)
    cluster.nodes[:] = trial.nodes
    return chosen


def _weight(demand: ModelDemand) -> tuple[float, float]:
    total = demand.total(1)
    return total.get("GPU", 0.0), total.get("CPU", 0.0)


def cluster_now(managed: dict[str, tuple[list[Resources], Resources]] | None = None) -> Cluster:
    """The alive nodes of the Ray cluster this process is connected to, with what is free on
    each for models: available now, plus what the Serve apps in `managed` (app -> (one
    replica's bundles, the ingress's resources)) hold, since the sweep may release them."""
    import ray

    from ray._private import state  # per-node available resources: no public API in Ray 2.60

    available: dict[str, dict[str, Any]] = state.available_resources_per_node()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    out = Cluster([Node(n["NodeID"], {k: float(v) for k, v in available.get(n["NodeID"], {}).items()
                                      if not _GROUP_RESOURCE.search(k)},
                        label=str(n.get("NodeManagerAddress", ""))) for n in nodes])
    if managed:
        _add_back(out, managed)
    return out


def _add_back(cluster: Cluster, apps: dict[str, tuple[list[Resources], Resources]]) -> None:
    """Count what the given apps hold as free: their replicas' placement groups (vLLM: the
    replica actor is inside), and replica actors outside any group (the ingress; the stand-in),
    at what their preset reserves, on the node each runs on. Best effort: a table that cannot be
    read leaves the capacity smaller, never larger."""
    import ray

    from ray._private import state

    by_id = {n.node_id: n for n in cluster.nodes}
    grouped: set[str] = set()  # apps whose engine replicas live in placement groups
    try:
        groups = ray.util.placement_group_table()
    except Exception as exc:  # noqa: BLE001
        log.debug("placement groups unreadable: %s", exc)
        groups = {}
    for info in groups.values():
        name = str(info.get("name") or "")
        app = next((a for a in apps if name.startswith(f"SERVE_REPLICA::{a}#")), None)
        if app is None or info.get("state") != "CREATED":
            continue
        grouped.add(app)
        for index, bundle in (info.get("bundles") or {}).items():
            node = by_id.get(str((info.get("bundles_to_node_id") or {}).get(index, "")))
            if node is not None:
                node.take({k: -float(v) for k, v in bundle.items()})
    try:
        actors = state.actors()
    except Exception as exc:  # noqa: BLE001
        log.debug("actor table unreadable: %s", exc)
        return
    for info in actors.values():
        name = str(info.get("Name") or "")
        app = next((a for a in apps if name.startswith(f"SERVE_REPLICA::{a}#")), None)
        if app is None or info.get("State") != "ALIVE":
            continue
        bundles, ingress = apps[app]
        deployment = name.split("#")[1] if name.count("#") >= 2 else ""
        held = ingress if "Ingress" in deployment else ({} if app in grouped or not bundles else bundles[0])
        node = by_id.get(str((info.get("Address") or {}).get("NodeID", "")))
        if node is not None and held:
            node.take({k: -float(v) for k, v in held.items()})


def declared_cluster(demands: Sequence[ModelDemand]) -> Cluster | None:
    """The allocation the presets declare (`model.serving.cluster`), when they agree and name
    GPUs: what `--plan` uses without a running cluster to ask."""
    from masgrid._private.actors.serving.spec import parse_serving

    specs = [parse_serving(d.settings.serving) for d in demands]
    gpu = [s for s in specs if s.kind == "vllm" and s.accelerator == "gpu"]
    if not gpu or len({s.cluster.model_dump_json() for s in gpu}) != 1:
        return None
    cl = gpu[0].cluster
    accelerators = {s.accelerator_type for s in gpu if s.accelerator_type}
    nodes = []
    for i in range(cl.nodes):
        free: Resources = {"GPU": float(cl.gpus_per_node), "CPU": float(cl.cpus_per_node)}
        for name in accelerators:
            free[f"accelerator_type:{name}"] = 1.0
        nodes.append(Node(f"node-{i}", free, label=f"node {i}"))
    return Cluster(nodes, source="preset")
