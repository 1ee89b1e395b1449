"""Executing a list of runs on Ray: the loop `ray_runs.run_many` hands its runs to.

`SweepExecution` starts runs in submission order as admission (platform/sweeps/admission.py) and
the budget allow, and collects them as they end. Its named parts each own one concern:

- `WorkerPool`: the driver processes runs go to when actors are reused (packing several runs
  into one process, warm drivers on a joined cluster, a worker retired after a failure);
- `RecorderRegistry`: one recorder actor per results_dir, marked in use while the sweep runs;
- `RetryPolicy`: an interrupted run is run again, at most `MAX_ATTEMPTS` times in all;
- `EndpointBreaker`: an endpoint found lost starts no more runs; its runs are held and the
  sweep ends with `EngineLost` naming them.

A results_dir that refuses a write stops new starts (`ResultsUnwritable` at the end); runs in
flight always finish.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from masgrid._private.platform.sweeps.admission import Admission, AdmissionControl, auto_ceiling, processes_per_run
from masgrid._private.platform.cluster.ray_session import NAMESPACE, ensure_ray, joined_cluster
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import (_RECORDERS, _RECORDERS_IN_USE, MAX_ATTEMPTS, MAX_IDLE_DRIVERS,
                                              MAX_WARM_DRIVERS, DriverWorker, _actor,
                                              _endpoint_settings, _endpoints, _ensure_deployments,
                                              _ensure_endpoint_limits, _stop_idle_recorders, _storage_errors_unwrapped,
                                              _warm_worker, driver_actor, engine_lost_error, host_pool,
                                              recorder_actor, recorder_key, storage_error,
                                              warm_driver, warm_drivers, warm_recorder)
from masgrid._private.platform.run.run_outcome import classify_failure
from masgrid._private.platform.run.run_summary import RunSummary, summary_of_row
from masgrid._private.platform.results.storage import ResultsUnwritable
from masgrid._private.platform.cluster.prefix_cache import reset_prefix_cache

if TYPE_CHECKING:
    from masgrid._private.platform.sweeps.budget import SweepBudget

#: the sweep's log lines come from ray_runs' logger, the module users start sweeps through
log = logging.getLogger("masgrid._private.platform.sweeps.ray_runs")


class WorkerPool:
    """Driver worker processes for runs that reuse actors (`execution.reuse_actors`): a worker
    with room for one more run (`execution.runs_per_driver`), else an idle one, else a new one.
    A worker whose run failed takes no more runs and is stopped once its last run ends."""

    def __init__(self, idle: list[Any], warm: bool) -> None:
        self.idle = idle  # shared with later calls of the session (or the warm drivers of a cluster)
        self.warm = warm
        self.warm_made = len(idle) if warm else 0
        self.load: dict[Any, int] = {}  # worker -> its runs in flight
        self.retired: set[Any] = set()

    def pick(self, cfg: RunConfig) -> Any:
        import ray

        worker = next((w for w, n in self.load.items() if n < (cfg.execution.runs_per_driver or 1)
                       and w not in self.retired), None)
        if worker is None and not self.idle and self.warm and self.warm_made < MAX_WARM_DRIVERS:
            self.warm_made += 1
            self.idle.append(warm_driver() if self.warm_made == 1 else _warm_worker(f"driver-{self.warm_made}"))
        if worker is None:
            worker = self.idle.pop() if self.idle else ray.remote(num_cpus=0)(DriverWorker).options(
                namespace=NAMESPACE, max_concurrency=16,
                resources=cfg.execution.driver_resources or None).remote(host_pool())
        self.load[worker] = self.load.get(worker, 0) + 1
        return worker

    def release(self, worker: Any, healthy: bool) -> None:
        """One run of `worker` ended: back to the idle list once it has none left."""
        import ray

        if not healthy:
            self.retired.add(worker)
        left = self.load.pop(worker, 1) - 1
        if left > 0:
            self.load[worker] = left
        elif worker in self.retired:
            self.retired.discard(worker)
            ray.kill(worker, no_restart=True)
        else:
            self.idle.append(worker)

    def trim(self) -> None:
        """Keep at most MAX_IDLE_DRIVERS idle workers for the session's next sweep."""
        import ray

        while len(self.idle) > MAX_IDLE_DRIVERS:
            ray.kill(self.idle.pop(), no_restart=True)


class RecorderRegistry:
    """The recorder actor of each results_dir the runs write; a session's recorders are marked
    in use until the sweep returns, so the idle-recorder clean-up never stops one meanwhile.
    On a joined cluster (warm) the detached recorder is claimed for this command's job."""

    def __init__(self, warm: bool, job: str) -> None:
        self.warm, self.job = warm, job
        self.recorders: dict[str, Any] = {}
        self.using: list[str] = []

    def of(self, cfg: RunConfig) -> Any:
        import ray

        if cfg.results_dir not in self.recorders:
            with _storage_errors_unwrapped():
                if not self.warm:
                    self.using.append(recorder_key(str(Path(cfg.results_dir).resolve())))
                    _RECORDERS_IN_USE[self.using[-1]] += 1
                self.recorders[cfg.results_dir] = (warm_recorder if self.warm else recorder_actor)(cfg.results_dir)
                if self.warm:  # this command holds the writer lock: runs of an earlier, killed one may not write
                    ray.get(_actor(self.recorders[cfg.results_dir]).claim.remote(self.job))
        return self.recorders[cfg.results_dir]

    def close(self) -> None:
        for used in self.using:
            _RECORDERS_IN_USE[used] -= 1
        _stop_idle_recorders()


@dataclass
class RetryPolicy:
    """An interrupted run (its driver or a host lost) is run again, up to `max_attempts` executions."""

    n_runs: int
    max_attempts: int = MAX_ATTEMPTS
    attempts: list[int] = field(init=False)  # executions of each run so far

    def __post_init__(self) -> None:
        self.attempts = [0] * self.n_runs

    def ran(self, idx: int) -> int:
        self.attempts[idx] += 1
        return self.attempts[idx]

    def again(self, idx: int, summary: RunSummary) -> bool:
        return summary.error_class == "interrupted" and self.attempts[idx] < self.max_attempts


@dataclass
class EndpointBreaker:
    """Endpoints found lost (endpoint -> what its probe found) and the runs held because of them."""

    lost: dict[str, str] = field(default_factory=dict)
    held: list[int] = field(default_factory=list)

    def blocks(self, endpoints: tuple[str, ...]) -> bool:
        return bool(self.lost) and bool(self.lost.keys() & set(endpoints))

    def trip(self, cfg: RunConfig, summary: RunSummary) -> None:
        endpoint = summary.engine_lost_endpoint or next(iter(_endpoints(cfg)), "?")
        if endpoint not in self.lost:
            log.error("model endpoint %s lost (%s): no more runs against it are started", endpoint, summary.engine_lost)
        self.lost.setdefault(endpoint, summary.engine_lost or "")


class SweepExecution:
    """One call of `run_many`: its runs, the parts above, and the start-and-collect loop."""

    def __init__(self, cfgs: list[RunConfig], max_concurrent: int | None,
                 on_done: Callable[[RunConfig, RunSummary], None] | None, keep_warm: bool = False,
                 admission: Admission = "fixed", gate: SweepBudget | None = None) -> None:
        import ray

        ensure_ray(cfgs[0].execution.ray_address)
        # warm actors only where they outlive this process, and not where drivers are placed by resources
        self.warm = keep_warm and joined_cluster() and not any(c.execution.driver_resources for c in cfgs)
        if self.warm:  # placement only: run ids unchanged
            cfgs = [c.model_copy(update={"execution": c.execution.model_copy(update={"reuse_actors": True})})
                    for c in cfgs]
        _ensure_deployments(cfgs)
        _ensure_endpoint_limits(cfgs)
        for root in sorted({str(Path(c.results_dir).resolve()) for c in cfgs}):
            log.info("masgrid: %d run(s); results are written to %s/{runs,agents,events}", len(cfgs), root)
        self.cfgs, self.on_done, self.gate = cfgs, on_done, gate
        self.job = ray.get_runtime_context().get_job_id()
        self.ends = [_endpoints(c) for c in cfgs]  # the model endpoints each run calls
        self.results: list[RunSummary | None] = [None] * len(cfgs)
        self.submitted: dict[int, datetime] = {}  # run index -> when its latest attempt was submitted (UTC)
        self.in_flight: dict[Any, tuple[int, Any]] = {}
        self.queue = list(enumerate(cfgs))
        self.stopped: ResultsUnwritable | None = None  # results_dir refused a write: start nothing more
        self.control = self._admission(admission, max_concurrent)
        self.control.pending = lambda name: any(name in self.ends[i] for i, _ in self.queue)
        self.workers = WorkerPool(self._first_workers(), self.warm)
        self.recorders = RecorderRegistry(self.warm, self.job)
        self.retries = RetryPolicy(len(cfgs))
        self.breaker = EndpointBreaker()

    def _admission(self, admission: Admission, max_concurrent: int | None) -> AdmissionControl:
        import ray

        cfgs = self.cfgs
        reset = any(c.execution.prefix_cache == "reset_per_run" for c in cfgs)
        cost = max(processes_per_run(c.execution.components, c.execution.runs_per_driver or 1, c.agents,
                                     c.execution.agents_per_actor) for c in cfgs)
        return AdmissionControl(admission, max_concurrent, _endpoint_settings(cfgs), one_at_a_time=reset,
                                auto=auto_ceiling(cost, ray.cluster_resources().get("CPU") or os.cpu_count() or 1))

    def _first_workers(self) -> list[Any]:
        """Warm drivers for the runs that start at once (more are fetched as admission raises its
        limits), or the session's idle driver workers."""
        if not self.warm:
            return _RECORDERS.setdefault(f"{self.job}:driver-workers", [])
        per_driver = max(c.execution.runs_per_driver or 1 for c in self.cfgs)  # runs a driver process takes at once
        first = min(self.control.initial_slots(any(not e for e in self.ends)), len(self.cfgs))
        return warm_drivers(-(-first // per_driver))

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> list[RunSummary]:
        import ray

        try:
            while (self.queue and self.stopped is None) or self.in_flight:
                self._start_what_may_start()
                if not self.in_flight:
                    if self.gate is not None and self.queue and self.stopped is None:
                        # none fits the budget and none is running
                        self.gate.set_aside([c for _, c in self.queue])
                        self.queue.clear()
                    continue
                # with runs held back by admission, look again once the engines' load may have changed
                done, _ = ray.wait(list(self.in_flight), num_returns=1,
                                   timeout=self.control.poll_s if self.queue and self.control.reads_load else None)
                for ref in done:
                    self._collect(ref)
            if self.breaker.lost:
                raise engine_lost_error(self.breaker.lost, self.cfgs, self.results, self.breaker.held)
            if self.stopped is not None:
                done_n = sum(r is not None for r in self.results)
                raise ResultsUnwritable(self.stopped.errno or 0, f"{self.stopped.strerror}; the sweep stopped with "
                                        f"{done_n} of {len(self.cfgs)} runs recorded; make results_dir writable (free "
                                        "space) and run the same command again to resume")
        finally:
            self.control.stop()
            self.workers.trim()
            self.recorders.close()
        return [r for r in self.results if r is not None]

    def _start_what_may_start(self) -> None:
        """One pass over the queue in order: start each run admission and the budget allow."""
        blocked: set[tuple[str, ...]] = set()  # endpoint sets admission refused in this pass
        pos = 0
        while pos < len(self.queue) and self.stopped is None and not self.control.full():
            idx, cfg = self.queue[pos]
            mine = tuple(self.ends[idx])
            if self.breaker.blocks(mine):
                self.queue.pop(pos)
                self.breaker.held.append(idx)
                continue
            if mine in blocked or not self.control.may_start(mine):
                blocked.add(mine)
                pos += 1
                continue
            if self.gate is not None and not self.gate.may_start(cfg):  # over budget: waits for the runs in flight
                pos += 1
                continue
            self.queue.pop(pos)
            self._start(idx, cfg, mine)

    def _start(self, idx: int, cfg: RunConfig, mine: tuple[str, ...]) -> None:
        if self.gate is not None:
            self.gate.started(cfg)
        if cfg.execution.prefix_cache == "reset_per_run" and mine:  # alone on its engines (admission)
            for settings in cfg.agent_endpoints():
                reset_prefix_cache(settings)
            cfg.mark_prefix_cache_reset()
        self.control.started(mine)
        self.submitted[idx] = datetime.now(UTC)
        rec = self.recorders.of(cfg)
        if cfg.execution.reuse_actors:
            worker = self.workers.pick(cfg)
            # the task and the worker's status actor carry the run's name in the dashboard
            self.in_flight[worker.run.options(name=f"run:{cfg.run_id}").remote(
                cfg, rec, self.job if self.warm else None)] = (idx, worker)
        else:
            driver = driver_actor(cfg, rec, self.retries.attempts[idx] + 1)
            self.in_flight[driver.run.remote()] = (idx, driver)

    def _collect(self, ref: Any) -> None:
        """A run's driver answered (or died): its summary recorded, retried or held."""
        idx, actor = self.in_flight.pop(ref)
        cfg = self.cfgs[idx]
        self.control.ended(self.ends[idx])
        if self.gate is not None:
            self.gate.ended(cfg)
        attempts = self.retries.ran(idx)
        summary = self._summary(ref, idx, actor)
        if summary is None:  # the results_dir refused the driver's write: the sweep stops starting runs
            return
        summary.attempts = attempts
        if summary.engine_lost is not None:  # recorded interrupted; running it again now would fail again
            self.breaker.trip(cfg, summary)
        elif self.retries.again(idx, summary) and self.stopped is None:
            log.warning("run %s interrupted (%s); running it again (attempt %d of %d)", cfg.run_id,
                        (summary.error or "").splitlines()[0], attempts + 1, self.retries.max_attempts)
            self.queue.insert(0, (idx, cfg))
            return
        if summary.status == "failed" and summary.error and summary.error.startswith("driver died"):
            self._record_driver_death(cfg, summary)
        self.results[idx] = summary
        if self.gate is not None:
            self.gate.finished(cfg, summary)
        if self.on_done:
            self.on_done(cfg, summary)

    def _summary(self, ref: Any, idx: int, actor: Any) -> RunSummary | None:
        """The run's summary; a driver that died gives a failed one, or the run it recorded before
        dying (None: it died of a refused write)."""
        import ray

        cfg = self.cfgs[idx]
        try:
            summary = ray.get(ref)
            if cfg.execution.reuse_actors:
                self.workers.release(actor, healthy=True)
            else:
                ray.kill(actor, no_restart=True)
            return summary
        except Exception as exc:  # noqa: BLE001 - the driver itself died (or could not record)
            if not cfg.execution.reuse_actors or isinstance(exc, ray.exceptions.RayActorError):
                ray.kill(actor, no_restart=True)  # dead, or its own: its other runs (if any) fail too
            if cfg.execution.reuse_actors:
                self.workers.release(actor, healthy=False)
            unwritable = storage_error(exc)
            if unwritable is not None:
                self.stopped = self.stopped or unwritable
                return None
            error_class = classify_failure(exc)
            recorded = self._recorded_before_death(idx) if error_class == "interrupted" else None
            return recorded or RunSummary(run_id=cfg.run_id, status="failed", error=f"driver died: {exc}",
                                          error_class=error_class, results_dir=cfg.results_dir)

    def _recorded_before_death(self, idx: int) -> RunSummary | None:
        """The run's summary when its driver died after writing the runs row (its node lost,
        say, while the driver shut down): the run ended and is kept, not run again.

        Only a row this attempt wrote counts: started no earlier than the attempt was submitted
        (an earlier attempt's or an earlier sweep's row started before), and not itself an
        interrupted run's. Submitter and driver clocks are compared: on a cluster whose clocks
        disagree by more than a driver's start-up, a real row is missed and the run runs again,
        as it did before."""
        import ray

        cfg = self.cfgs[idx]
        try:
            row = ray.get(_actor(self.recorders.of(cfg)).recorded_run.remote(cfg.run_id, cfg.partition), timeout=60)
        except Exception as exc:  # noqa: BLE001 - the recorder cannot say: the run is retried as before
            log.debug("run %s: could not read its runs row (%s)", cfg.run_id, exc)
            return None
        if row is None or row.get("error_class") == "interrupted":
            return None
        started = row.get("started_at")
        if not isinstance(started, datetime) or started.tzinfo is None or started < self.submitted[idx]:
            return None
        log.warning("run %s: its driver died after the run was recorded (%s); the recorded run is kept",
                    cfg.run_id, row.get("status"))
        return summary_of_row(cfg.task, row, cfg.results_dir)

    def _record_driver_death(self, cfg: RunConfig, summary: RunSummary) -> None:
        """A run whose driver died left no runs row: the sweep writes its failed row."""
        import ray

        log.error("run %s failed: %s", cfg.run_id, summary.error)
        row = {**cfg.columns(), "status": "failed", "error": summary.error, "error_class": summary.error_class}
        try:
            ray.get(_actor(self.recorders.of(cfg)).finish_run.remote(row, [], cfg.partition))
        except Exception as exc:  # noqa: BLE001 - unrecorded: a resume runs it (no runs row)
            self.stopped = self.stopped or storage_error(exc)
