"""What one model preset reserves on a Ray cluster, worked out from its `model.serving`
without Ray or vLLM, so a sweep can plan which models fit together before it starts.

Ray Serve LLM (2.60) asks, per engine replica, one placement group of one bundle per engine
worker (tensor x pipeline parallel ranks; `bundle_per_worker`, plus `accelerator_type:<X>`
= 0.001 where the preset names an accelerator), the replica actor's own CPUs (`replica_cpus`,
Serve LLM's default 1) added to the first bundle; and, once per application, the OpenAI
ingress replica (`ingress_cpus`, Serve LLM's default 1 CPU). The stand-in reserves
`standin.cpus` per replica (none by default).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.actors.serving.spec import ServingSpec, parse_serving

#: CPUs Serve LLM gives the engine replica actor, and the ingress replica, when the preset says nothing
REPLICA_ACTOR_CPUS = 1.0
INGRESS_CPUS_DEFAULT = 1.0
#: resource amounts below this are Ray's accelerator markers (0.001), not quantities to show
_MARKER = 0.01

Resources = dict[str, float]


@dataclass(frozen=True)
class ModelDemand:
    """One managed model of a sweep: its Serve app and what each replica and the app reserve."""

    settings: BackendSettings = field(compare=False, repr=False)
    name: str  # the preset's name (runs' `model` column)
    app: str  # Serve application name: the key a sweep manages models by
    bundles: tuple[tuple[tuple[str, float], ...], ...]  # one replica's placement group
    strategy: str
    ingress: tuple[tuple[str, float], ...]  # once per application
    replicas: int | None  # None: replicas=auto (filled per phase)
    auto_max: int
    release: str  # delete | sleep
    gpu_memory: float  # share of one GPU's memory each GPU bundle's engine takes while awake (0: none)
    fingerprint: str  # the deployment's configuration: a different one is a different model

    @property
    def replica_bundles(self) -> list[Resources]:
        return [dict(b) for b in self.bundles]

    @property
    def ingress_resources(self) -> Resources:
        return dict(self.ingress)

    def total(self, replicas: int = 1) -> Resources:
        """Resources of `replicas` replicas and the ingress, summed over bundles."""
        out: Resources = dict(self.ingress)
        for bundle in self.bundles:
            for key, amount in bundle:
                out[key] = out.get(key, 0.0) + amount * replicas
        return out

    def describe(self, replicas: int = 1) -> str:
        """`tiny_a (app tiny-a): 1 replica(s) x [1 x (CPU 1.5)] + ingress CPU 0.1 = CPU 1.6`."""
        groups: list[tuple[int, str]] = []
        for bundle in self.bundles:
            text = _fmt(dict(bundle))
            if groups and groups[-1][1] == text:
                groups[-1] = (groups[-1][0] + 1, text)
            else:
                groups.append((1, text))
        shown = " + ".join(f"{n} x ({text})" for n, text in groups) or "nothing"
        accelerators = sorted({k.split(":", 1)[1] for b in self.bundles for k, _ in b if k.startswith("accelerator_type:")})
        on = f" on {', '.join(accelerators)}" if accelerators else ""
        return (f"{self.name} (app {self.app}): {replicas} replica(s) x [{shown}]{on} + ingress "
                f"{_fmt(dict(self.ingress))} = {_fmt(self.total(replicas), markers=False)}")


def demand_of(settings: BackendSettings) -> ModelDemand:
    """The reservation of the preset `settings` deploys (a ServingError names a bad key)."""
    spec = parse_serving(settings.serving)
    return ModelDemand(settings=settings, name=settings.name, app=spec.app, bundles=_bundles(spec),
                       strategy=spec.placement_strategy if spec.kind == "vllm" else "PACK",
                       ingress=tuple(sorted(_ingress(spec).items())),
                       replicas=None if spec.replicas == "auto" else spec.max_replicas,
                       auto_max=spec.auto_replicas_max, release=spec.release,
                       gpu_memory=spec.engine.gpu_memory_utilization
                       if spec.kind == "vllm" and spec.accelerator == "gpu" else 0.0,
                       fingerprint=fingerprint(settings, spec))


def _bundles(spec: ServingSpec) -> tuple[tuple[tuple[str, float], ...], ...]:
    if spec.kind != "vllm":  # the stand-in: one replica actor, no placement group
        return ((("CPU", float(spec.standin.cpus)),),) if spec.standin.cpus > 0 else ()
    pg = spec.placement_group_config()
    worker: Resources = {k: float(v) for k, v in pg["bundle_per_worker"].items()}
    if spec.accelerator_type:
        worker.setdefault(f"accelerator_type:{spec.accelerator_type}", 0.001)
    bundles = [dict(worker) for _ in range(spec.parallelism.gpus)]
    actor = REPLICA_ACTOR_CPUS if spec.replica_cpus is None else spec.replica_cpus
    bundles[0]["CPU"] = bundles[0].get("CPU", 0.0) + actor  # the replica actor shares the first bundle
    return tuple(tuple(sorted((k, v) for k, v in b.items() if v > 0)) for b in bundles)


def _ingress(spec: ServingSpec) -> Resources:
    if spec.kind != "vllm":
        return {}
    cpus = INGRESS_CPUS_DEFAULT if spec.ingress_cpus is None else spec.ingress_cpus
    return {"CPU": float(cpus)} if cpus > 0 else {}


def fingerprint(settings: BackendSettings, spec: ServingSpec | None = None) -> str:
    """Hash of what the deployment runs: served name, route, engine, placement (not the replica
    count, which a phase chooses)."""
    spec = spec or parse_serving(settings.serving)
    blob = json.dumps({"served": settings.request_model,
                       "serving": spec.model_dump(mode="json", exclude={"replicas", "auto_replicas_max", "release"})},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _fmt(resources: Resources, markers: bool = True) -> str:
    parts = []
    for key in sorted(resources, key=lambda k: (k not in ("GPU", "CPU"), k)):
        amount = resources[key]
        if amount < _MARKER or (not markers and key.startswith("accelerator_type:")):
            continue
        parts.append(f"{key} {amount:g}" if not math.isclose(amount, round(amount)) else f"{key} {round(amount)}")
    return ", ".join(parts) or "nothing"


def fmt_resources(resources: dict[str, Any]) -> str:
    """Resources as `GPU 16, CPU 17` (markers below 0.01 left out)."""
    return _fmt({k: float(v) for k, v in resources.items()})
