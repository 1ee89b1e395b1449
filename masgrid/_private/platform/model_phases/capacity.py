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

from masgrid._private.platform.model_phases.demand import ModelDemand, Resources, fmt_resources

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
                if not key.startswith(_NOISE):
                    out[key] = out.get(key, 0.0) + amount
        return out

    def describe(self) -> str:
        per_node = sorted({fmt_resources({k: v for k, v in n.free.items() if not k.startswith(_NOISE)})
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


def place(cluster: Cluster, wanted: Iterable[tuple[ModelDemand, int]],
          placed: Placement | None = None) -> Placement | None:
    """Place `replicas` replicas of each model (and each app's ingress) on a copy-free
    `cluster` (mutated: what is placed is taken); None when something does not fit. Larger
    groups go first, as a packer would."""
    placed = placed if placed is not None else Placement()
    order = sorted(wanted, key=lambda w: _weight(w[0]), reverse=True)
    for demand, replicas in order:
        for replica in range(replicas):
            nodes = place_group(cluster, demand.replica_bundles, demand.strategy)
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


def cluster_now(managed_apps: Iterable[str] = ()) -> Cluster:
    """The alive nodes of the Ray cluster this process is connected to, with what is free on
    each for models: available now, plus what the Serve apps in `managed_apps` hold (the
    sweep may release them), found from their replicas' placement groups."""
    import ray

    from ray._private import state  # per-node available resources: no public API in Ray 2.60

    available: dict[str, dict[str, Any]] = state.available_resources_per_node()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    out = Cluster([Node(n["NodeID"], {k: float(v) for k, v in available.get(n["NodeID"], {}).items()
                                      if not _GROUP_RESOURCE.search(k)},
                        label=str(n.get("NodeManagerAddress", ""))) for n in nodes])
    managed = set(managed_apps)
    if managed:
        _add_back(out, managed)
    return out


def _add_back(cluster: Cluster, apps: set[str]) -> None:
    """Count the resources the given apps' replicas and ingress hold as free (best effort)."""
    import ray

    by_id = {n.node_id: n for n in cluster.nodes}
    try:
        groups = ray.util.placement_group_table()
    except Exception as exc:  # noqa: BLE001 - planning then sees less free capacity, never more
        log.debug("placement groups unreadable: %s", exc)
        groups = {}
    for info in groups.values():
        name = str(info.get("name") or "")
        if info.get("state") != "CREATED" or not any(name.startswith(f"SERVE_REPLICA::{app}#") for app in apps):
            continue
        for index, bundle in (info.get("bundles") or {}).items():
            node = by_id.get(str((info.get("bundles_to_node_id") or {}).get(index, "")))
            if node is not None:
                node.take({k: -float(v) for k, v in bundle.items()})
    try:
        actors = _alive_actors()
    except Exception as exc:  # noqa: BLE001
        log.debug("actor table unreadable: %s", exc)
        return
    for name, node_id, resources in actors:
        if "Ingress" not in name or not any(name.startswith(f"SERVE_REPLICA::{app}#") for app in apps):
            continue
        node = by_id.get(node_id)
        if node is not None and resources:
            node.take({k: -v for k, v in resources.items()})


def _alive_actors() -> list[tuple[str, str, Resources]]:
    """(name, node id, resources it reserved) of each alive actor. Read from the GCS actor table
    as stored: `ray._private.state.actors()` leaves out what an actor reserved (Ray 2.60)."""
    from ray._private import state
    from ray.core.generated import gcs_pb2

    out = []
    for raw in state.state._connect_and_get_accessor().get_actor_table(None, "ALIVE"):
        data = gcs_pb2.ActorTableData.FromString(raw)  # type: ignore[attr-defined]  # generated, no stubs
        out.append((data.name, data.address.node_id.hex(), {k: float(v) for k, v in data.required_resources.items()}))
    return out


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
