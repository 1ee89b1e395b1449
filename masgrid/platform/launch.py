"""Starting runs: join or start Ray, one recorder actor per results_dir, one driver per run."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from masgrid.actors import heap
from masgrid.platform.config import RunConfig
from masgrid.platform.driver import RunDriver, RunSummary
from masgrid.platform.recorder import Recorder
from masgrid.platform.results_lock import ResultsLock
from masgrid.platform.run_status import RunName

log = logging.getLogger("masgrid")
NAMESPACE = "masgrid"
#: session-wide actors (a recorder per results_dir, the host pool), kept alive here: an
#: actor whose last handle goes out of scope is destroyed, and a later lookup by name
#: could race with that.
_RECORDERS: dict[str, Any] = {}
#: warm driver processes kept between run_many calls (execution.reuse_actors)
MAX_IDLE_DRIVERS = 32


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> None:
    import ray

    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    kwargs: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": True}
    if os.environ.get("MASGRID_CONF"):  # drivers must render the prompts the run ids were computed from
        kwargs["runtime_env"] = {"env_vars": {"MASGRID_CONF": os.environ["MASGRID_CONF"]}}
    kwargs.update(init_kwargs)
    ray.init(address=address, **kwargs)


def recorder_actor(results_dir: str) -> Any:
    """The single writer of a results_dir, pinned to this node (where the results live)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    root = str(Path(results_dir).resolve())
    key = f"{ray.get_runtime_context().get_job_id()}:{root}"  # a new Ray session needs new actors
    if key in _RECORDERS:
        return _RECORDERS[key]
    name = "recorder:" + hashlib.sha1(root.encode()).hexdigest()[:12]
    node = ray.get_runtime_context().get_node_id()
    actor = ray.remote(num_cpus=0)(Recorder).options(
        name=name, namespace=NAMESPACE, get_if_exists=True, lifetime=None,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
    ).remote(root)
    ray.get(actor.ready.remote())
    _RECORDERS[key] = actor
    return actor


def host_pool() -> Any:
    """The session's pool of warm environment/agent hosts (`execution.reuse_actors`)."""
    import ray

    from masgrid.platform.pool import HostPool

    key = f"{ray.get_runtime_context().get_job_id()}:pool"
    if key not in _RECORDERS:
        _RECORDERS[key] = ray.remote(num_cpus=0)(HostPool).options(
            name="host-pool", namespace=NAMESPACE, get_if_exists=True).remote()
    return _RECORDERS[key]


def driver_actor(cfg: RunConfig, recorder: Any) -> Any:
    import ray

    from masgrid.platform.pool import DriverHosts

    pool = DriverHosts(host_pool()) if cfg.execution.reuse_actors else None
    return ray.remote(num_cpus=0)(RunDriver).options(
        name=f"run:{cfg.run_id}", namespace=NAMESPACE, max_concurrency=16,
        resources=cfg.execution.driver_resources or None,
    ).remote(cfg, recorder, True, pool)


class DriverWorker:
    """A long-lived driver process executing runs one after another (warm-pool mode), so a
    run borrows an already-started process instead of starting one (bench_serving_concurrency)."""

    def __init__(self, pool: Any) -> None:
        from masgrid.platform.pool import DriverHosts

        self.pool = DriverHosts(pool)  # keeps the hosts of its last run for the next one

    async def run(self, cfg: RunConfig, recorder: Any) -> RunSummary:
        name = RunName(cfg.run_id)  # the run's name in the dashboard (see run_status.py)
        try:
            summary = await RunDriver(cfg, recorder, True, self.pool, status=name).run()
        finally:
            name.close()
        heap.settle()  # the run's objects are garbage now; the next run starts with a frozen heap
        return summary


def run_local(cfg: RunConfig) -> RunSummary:
    """Everything in this process: no Ray at all (debugging, profiling)."""
    with writer_locks([cfg]):
        return asyncio.run(RunDriver(cfg, Recorder(cfg.results_dir), False).run())


def run_one(cfg: RunConfig) -> RunSummary:
    if cfg.execution.executor == "local":
        return run_local(cfg)
    return run_many([cfg], max_concurrent=1)[0]


def _ensure_deployments(cfgs: list[RunConfig]) -> None:
    """backend=serve: the model's Serve app must be up before drivers start (deploys it if not)."""
    seen: set[str] = set()
    for cfg in cfgs:
        # A preset with its own base_url points at an endpoint someone else runs.
        if cfg.backend == "serve" and not cfg.model.base_url and cfg.model.name not in seen:
            seen.add(cfg.model.name)
            from masgrid.platform.serving import ensure_served

            ensure_served(cfg.model)


def run_many(cfgs: Iterable[RunConfig], max_concurrent: int = 4,
             on_done: Callable[[RunConfig, RunSummary], None] | None = None) -> list[RunSummary]:
    """Execute runs on Ray, at most `max_concurrent` drivers at once, in submission order,
    holding each results_dir's writer lock (ResultsDirBusy if another process holds one)."""
    cfgs = list(cfgs)
    if not cfgs:
        return []
    with writer_locks(cfgs):
        return _run_many(cfgs, max_concurrent, on_done)


@contextmanager
def writer_locks(cfgs: Iterable[RunConfig]) -> Iterator[None]:
    """Hold the one-writer lock of every results_dir the runs write (platform/results_lock.py)."""
    roots = sorted({str(Path(c.results_dir).resolve()) for c in cfgs})
    held: list[str] = []
    try:
        for root in roots:
            ResultsLock.hold(root)
            held.append(root)
        yield
    finally:
        for root in held:
            ResultsLock.drop(root)


def _run_many(cfgs: list[RunConfig], max_concurrent: int,
              on_done: Callable[[RunConfig, RunSummary], None] | None) -> list[RunSummary]:
    import ray

    ensure_ray(cfgs[0].execution.ray_address)
    _ensure_deployments(cfgs)
    for root in sorted({str(Path(c.results_dir).resolve()) for c in cfgs}):
        print(f"masgrid: {len(cfgs)} run(s); results are written to {root}/{{runs,agents,events}}", flush=True)
    recorders: dict[str, Any] = {}
    results: list[RunSummary | None] = [None] * len(cfgs)
    in_flight: dict[Any, tuple[int, Any]] = {}
    key = f"{ray.get_runtime_context().get_job_id()}:driver-workers"
    idle_workers: list[Any] = _RECORDERS.setdefault(key, [])  # warm drivers kept for the session
    queue = list(enumerate(cfgs))
    try:
        while queue or in_flight:
            while queue and len(in_flight) < max_concurrent:
                idx, cfg = queue.pop(0)
                if cfg.results_dir not in recorders:
                    recorders[cfg.results_dir] = recorder_actor(cfg.results_dir)
                rec = recorders[cfg.results_dir]
                if cfg.execution.reuse_actors:
                    worker = idle_workers.pop() if idle_workers else ray.remote(num_cpus=0)(DriverWorker).options(
                        namespace=NAMESPACE, max_concurrency=16,
                        resources=cfg.execution.driver_resources or None).remote(host_pool())
                    # the task and the worker's status actor carry the run's name in the dashboard
                    in_flight[worker.run.options(name=f"run:{cfg.run_id}").remote(cfg, rec)] = (idx, worker)
                else:
                    driver = driver_actor(cfg, rec)
                    in_flight[driver.run.remote()] = (idx, driver)
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                idx, actor = in_flight.pop(ref)
                cfg = cfgs[idx]
                try:
                    summary = ray.get(ref)
                    if cfg.execution.reuse_actors:
                        idle_workers.append(actor)
                    else:
                        ray.kill(actor, no_restart=True)
                except Exception as exc:  # noqa: BLE001 - the driver itself died: record it here
                    ray.kill(actor, no_restart=True)
                    summary = RunSummary(run_id=cfg.run_id, status="failed", error=f"driver died: {exc}",
                                         results_dir=cfg.results_dir)
                    log.error("run %s failed: %s", cfg.run_id, exc)
                    row = {**cfg.columns(), "status": "failed", "error": summary.error}
                    ray.get(recorders[cfg.results_dir].finish_run.remote(row, [], cfg.partition))
                results[idx] = summary
                if on_done:
                    on_done(cfg, summary)
    finally:
        while len(idle_workers) > MAX_IDLE_DRIVERS:
            ray.kill(idle_workers.pop(), no_restart=True)
    return [r for r in results if r is not None]
