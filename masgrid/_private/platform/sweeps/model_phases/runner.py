"""Executing a sweep in model phases: release what the next phase does not need, deploy what
it does, run every pending run it serves, record how long each step took, go on.

A model that does not load holds its phase's runs that need it (not run, with the cause; a
resume tries again) and the sweep goes on. An engine lost mid-phase ends that phase's runs
against it as interrupted (never as model failures; ray_runs.run_many does that), and the runs
not yet recorded are planned again on what the cluster has then, at most MAX_REPLANS times.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any
from collections.abc import Callable, Sequence

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.model_phases import cluster_state
from masgrid._private.platform.sweeps.model_phases.capacity import Cluster, cluster_now, fits
from masgrid._private.platform.sweeps.model_phases.demand import ModelDemand
from masgrid._private.platform.sweeps.model_phases.plan import Phase, PhasePlan, PhasePlanError, managed_models, plan_phases

log = logging.getLogger(__name__)
#: times the runs left after a lost engine or node are planned again within one sweep
MAX_REPLANS = 2

OnDone = Callable[[RunConfig, Any], None]
Execute = Callable[[list[RunConfig], OnDone], None]


def needs_phases(cfgs: Sequence[RunConfig]) -> bool:
    """Whether any run needs a model the sweep deploys itself."""
    return any(not s.base_url for c in cfgs for s in c.agent_endpoints())


def current_plan(cfgs: Sequence[RunConfig]) -> PhasePlan:
    """The plan for `cfgs` on the cluster this process is connected to."""
    deployed = _deployed_apps()
    held: dict[str, tuple[list[dict[str, float]], dict[str, float]]] = {
        app: (entry.get("bundles") or [], entry.get("ingress") or {})
        for app, entry in cluster_state.managed_apps().items()}
    for cfg in cfgs:
        for demand in managed_models(cfg):
            held[demand.app] = (demand.replica_bundles, demand.ingress_resources)
    cluster = cluster_now({app: held[app] for app in deployed if app in held})
    return plan_phases(cfgs, cluster, deployed=_reusable(cfgs, deployed))


@dataclass
class PhaseRunner:
    """One sweep's phases. `execute(runs, on_done)` runs a list of runs (ray_runs.run_many);
    `on_done` is the sweep's per-run callback; `hold(cfg, why)` records a run not started."""

    execute: Execute
    on_done: OnDone
    hold: Callable[[RunConfig, str], None]
    note: Callable[[str], None]
    rows: list[dict[str, Any]] = field(default_factory=list)
    sweep_id: str = ""
    results_dirs: list[str] = field(default_factory=list)

    def run(self, todo: list[RunConfig]) -> None:
        from masgrid._private.platform.cluster.engine_alive import EngineLost

        self.sweep_id = _sweep_id(todo)
        self.results_dirs = sorted({c.results_dir for c in todo})
        with cluster_state.phase_lock():
            pending = list(todo)
            replans = 0
            while pending:
                plan = current_plan(pending)
                self.note(plan.text())
                try:
                    pending = self._run_plan(plan)
                except EngineLost as exc:
                    replans += 1
                    pending = self._left_after_loss(plan, exc)
                    if replans > MAX_REPLANS or not pending:
                        for cfg, summary in self._deferred:  # recorded interrupted: a resume runs them
                            self.on_done(cfg, summary)
                        raise
                    self.note(f"model phases: {exc}; planning the {len(pending)} run(s) left again on what the "
                              f"cluster has now (re-plan {replans} of {MAX_REPLANS})")

    # -- one plan -----------------------------------------------------------------------------
    def _run_plan(self, plan: PhasePlan) -> list[RunConfig]:
        self._done: set[str] = set()
        self._deferred: list[tuple[RunConfig, Any]] = []
        for phase in plan.phases:
            if not phase.runs:  # resume: nothing pending in this phase, so nothing is loaded for it
                continue
            self._run_phase(plan, phase)
        return []

    def _run_phase(self, plan: PhasePlan, phase: Phase) -> None:
        started = _now()
        row: dict[str, Any] = {"sweep_id": self.sweep_id, "phase": len(self.rows) + 1,
                               "models": [plan.demands[a].name for a in phase.models],
                               "replicas_json": _json({plan.demands[a].name: phase.replicas[a] for a in phase.models}),
                               "kept": [], "loaded": [], "released": [], "failed": [], "error": None,
                               "load_s": 0.0, "release_s": 0.0, "run_s": 0.0, "runs": len(phase.runs),
                               "runs_held": 0, "cluster": plan.cluster.describe(), "started_at": started}
        t0 = time.monotonic()
        released = release_unneeded(plan, set(phase.models) | set(phase.asleep), self.note)
        for app in phase.sleeps:
            set_asleep(plan.demands[app], True, self.note)
            released.append(plan.demands[app].name)
        row["released"] = released
        row["release_s"] = time.monotonic() - t0
        t1 = time.monotonic()
        failed: dict[str, str] = {}
        up = set(_deployed_apps())
        for app in phase.models:
            demand = plan.demands[app]
            if app in up and _registered(app, demand, "asleep"):
                try:
                    set_asleep(demand, False, self.note)
                    row["loaded"].append(demand.name)
                    continue
                except Exception as exc:  # noqa: BLE001 - not woken: deployed afresh below
                    log.warning("model %s did not wake (%s); deploying it again", demand.name, exc)
            if app in up and _registered(app, demand):
                row["kept"].append(demand.name)
                continue
            try:
                probe = next(c for c in phase.runs if app in plan.needs[c.run_id])
                load_model(demand, phase.replicas[app], probe, self.note)
                row["loaded"].append(demand.name)
            except Exception as exc:  # noqa: BLE001 - a model that does not load holds its runs, the sweep goes on
                failed[app] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                log.error("model %s did not load: %s", demand.name, failed[app])
        row["load_s"] = time.monotonic() - t1
        runnable = []
        for cfg in phase.runs:
            missing = [a for a in plan.needs[cfg.run_id] if a in failed]
            if missing:
                self.hold(cfg, f"not run: model {plan.demands[missing[0]].name} did not load ({failed[missing[0]]})")
                self._done.add(cfg.run_id)
                row["runs_held"] += 1
            else:
                runnable.append(cfg)
        row["failed"] = [plan.demands[a].name for a in failed]
        row["error"] = "; ".join(f"{plan.demands[a].name}: {why}" for a, why in failed.items()) or None
        self._write([*self.rows, {**row, "run_s": None, "ended_at": None}])  # a killed command keeps its loads
        t2 = time.monotonic()
        try:
            if runnable:
                self.note(f"model phase {row['phase']}: {', '.join(row['models']) or 'no managed model'}; "
                          f"{len(runnable)} run(s)")
                self.execute(runnable, self._on_done)
        except BaseException as exc:
            row["error"] = row["error"] or f"stopped: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            raise
        finally:
            row["run_s"] = time.monotonic() - t2
            row["ended_at"] = _now()
            self.rows.append(row)
            self._write(self.rows)

    def _on_done(self, cfg: RunConfig, summary: Any) -> None:
        if getattr(summary, "engine_lost", None) is not None:  # interrupted by a lost engine: planned again
            self._deferred.append((cfg, summary))
            return
        self._done.add(cfg.run_id)
        self.on_done(cfg, summary)

    def _left_after_loss(self, plan: PhasePlan, exc: Exception) -> list[RunConfig]:
        """The runs of `plan` not finished when an engine was lost; the lost app is deleted so
        the next plan deploys it afresh (or elsewhere, if its node is gone)."""
        endpoint = str(getattr(exc, "endpoint", "") or "")
        for app, demand in plan.demands.items():
            if endpoint.endswith(f"Serve app {app}") or _route_of(demand) in endpoint:
                delete_app(app)
        return [c for p in plan.phases for c in p.runs if c.run_id not in self._done]

    def _write(self, rows: list[dict[str, Any]]) -> None:
        from masgrid._private.platform.sweeps.model_phases.phase_table import write_phases

        write_phases(rows, self.sweep_id, self.results_dirs)


def release_unneeded(plan: PhasePlan, keep: set[str], note: Callable[[str], None]) -> list[str]:
    """Release the managed apps up now that are not in `keep` (this sweep's models, and those
    an earlier phased sweep deployed); apps deployed any other way are left alone."""
    managed = cluster_state.managed_apps()
    ours = set(plan.demands) | set(managed)
    names = []
    for app in _deployed_apps():
        if app in keep or app not in ours:
            continue
        name = plan.demands[app].name if app in plan.demands else str(managed.get(app, {}).get("model", app))
        note(f"model phases: releasing {name}")
        delete_app(app)
        names.append(name)
    return names


def load_model(demand: ModelDemand, replicas: int, probe: RunConfig, note: Callable[[str], None]) -> None:
    """Deploy the model, then the preflight's check through it with the first prompt of a run
    it serves (a deployment that is up but cannot answer that run fails here)."""
    from masgrid._private.actors.serving.deploy import deploy
    from masgrid._private.platform.sweeps.preflight import check_served, note_probes

    note(f"model phases: loading {demand.name} ({replicas} replica(s))")
    bundles, ingress = demand.replica_bundles, demand.ingress_resources
    cluster_state.remember_app(demand.app, demand.fingerprint, demand.name, "loading", bundles, ingress)
    try:
        deploy(demand.settings, replicas=replicas)
    except BaseException:
        delete_app(demand.app)  # nothing half-deployed is left holding the cluster
        raise
    cluster_state.remember_app(demand.app, demand.fingerprint, demand.name, "running", bundles, ingress)
    found = check_served(probe, demand.settings)
    if found:  # the probe's tokens, as preflight notes its own (the engine counted them too)
        note_probes([probe], [found])


def delete_app(app: str, settle_s: float = 15.0) -> None:
    """Delete the app; return once Ray has removed its replicas' placement groups too (a plan
    made right after would otherwise still see their resources taken)."""
    import ray
    from ray import serve

    try:
        serve.delete(app)  # waits until its replicas, and their engines, are stopped
    except Exception as exc:  # noqa: BLE001 - already gone
        log.debug("Serve app %s: %s", app, exc)
    cluster_state.forget_app(app)
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        try:
            groups = ray.util.placement_group_table().values()
        except Exception:  # noqa: BLE001 - nothing to wait for then
            return
        if not any(str(g.get("name") or "").startswith(f"SERVE_REPLICA::{app}#") and g.get("state") != "REMOVED"
                   for g in groups):
            return
        time.sleep(0.2)


def ensure_models(cfgs: Sequence[RunConfig], note: Callable[[str], None] = log.info) -> None:
    """Outside a sweep (`masgrid run`, the Python API): deploy what these runs need as one
    phase; the managed apps up that they do not need (left by a phased sweep or an earlier
    run) are released only when what is missing does not fit beside them. Runs
    whose models cannot be up together are refused (PhasePlanError): a sweep runs them in phases."""
    wanted = {d.app: d for c in cfgs for d in managed_models(c)}
    up = set(_deployed_apps())
    if all(app in up for app in wanted):
        return
    with cluster_state.phase_lock():
        plan = current_plan(cfgs)
        if len(plan.phases) > 1:
            raise PhasePlanError(f"these runs need {', '.join(sorted(d.name for d in wanted.values()))}, which do not "
                                 f"fit on the cluster together ({plan.cluster.describe()}); run them as a sweep "
                                 "(masgrid run -m), which deploys them in phases")
        phase = plan.phases[0]
        missing = [(plan.demands[app], phase.replicas[app]) for app in phase.models if app not in up]
        if not fits(cluster_now(), missing):  # no room beside what is up: release what these runs do not need
            release_unneeded(plan, set(phase.models), note)
        up = set(_deployed_apps())
        for app in phase.models:
            if app not in up:
                probe = next(c for c in phase.runs if app in plan.needs[c.run_id])
                load_model(plan.demands[app], phase.replicas[app], probe, note)


def _deployed_apps() -> list[str]:
    from ray import serve

    try:
        return sorted(serve.status().applications)
    except Exception:  # noqa: BLE001 - no Serve instance yet
        return []


def _registered(app: str, demand: ModelDemand, state: str = "running") -> bool:
    """A deployed app counts as this model when a phased sweep deployed it with the same settings."""
    entry = cluster_state.managed_apps().get(app)
    return entry is not None and entry.get("fingerprint") == demand.fingerprint and entry.get("state") == state


def set_asleep(demand: ModelDemand, asleep: bool, note: Callable[[str], None]) -> None:
    """Put a model to sleep or wake it (release: sleep; vLLM GPU builds): Serve LLM's control
    routes (/sleep, /wakeup) on the app's HTTP route reach every replica of the model."""
    import json
    import urllib.request

    from masgrid._private.actors.serving.spec import parse_serving

    spec = parse_serving(demand.settings.serving)
    verb = "sleep" if asleep else "wakeup"
    note(f"model phases: {'putting ' + demand.name + ' to sleep' if asleep else 'waking ' + demand.name}")
    url = f"http://127.0.0.1:{spec.http_port}{spec.route_prefix.rstrip('/')}/{verb}"
    body = {"model": demand.settings.request_model, "options": {"level": 1} if asleep else {}}
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        if response.status != 200:
            raise RuntimeError(f"{verb} of {demand.name}: HTTP {response.status}")
    cluster_state.remember_app(demand.app, demand.fingerprint, demand.name, "asleep" if asleep else "running",
                               demand.replica_bundles, demand.ingress_resources)


def _reusable(cfgs: Sequence[RunConfig], deployed: Sequence[str]) -> list[str]:
    demands = {d.app: d for c in cfgs for d in managed_models(c)}
    return [a for a in deployed if a in demands and _registered(a, demands[a])]


def _route_of(demand: ModelDemand) -> str:
    from masgrid._private.actors.serving.spec import parse_serving

    return parse_serving(demand.settings.serving).route_prefix.rstrip("/") + "/v1"


def _sweep_id(todo: Sequence[RunConfig]) -> str:
    blob = "|".join(sorted(c.run_id for c in todo)) + f"|{time.time()}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _now() -> datetime:
    return datetime.now(UTC)


def _json(data: Any) -> str:
    import json

    return json.dumps(data, sort_keys=True)


__all__ = ["Cluster", "MAX_REPLANS", "PhaseRunner", "current_plan", "needs_phases"]
