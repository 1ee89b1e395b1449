"""Runs on Ray: one recorder actor per results_dir, one driver per run, warm processes, and
`run_many`, which hands a list of runs to the sweep execution (sweep_execution.py).

No single process may end a sweep. The recorder and the host pool are restarted by Ray when
they die (`max_restarts=-1`), and calls they were serving are sent again
(`max_task_retries=-1`: the recorder's writes are idempotent, the pool's acquire just makes
new hosts). A run the platform interrupted (its driver, a host, the pool that owned its
hosts died; a node was lost) is run again, up to `MAX_ATTEMPTS` times in all; after that it
is recorded failed with error_class `interrupted`, which a plain resume re-runs. A results
directory that refuses writes stops the sweep (`ResultsUnwritable`) once the runs in flight
have ended. So does a model endpoint a run found gone (`EngineLost`, platform/cluster/engine_alive.py):
that run is recorded interrupted and not run again now, no further run against the endpoint
starts, and runs against other endpoints go on.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import Counter, OrderedDict
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Iterator

from masgrid._private.actors import heap
from masgrid._private.platform.sweeps.admission import Admission
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.cluster.prefix_cache import reset_prefix_cache
from masgrid._private.platform.run.driver import RunDriver
from masgrid._private.platform.run.run_summary import RunSummary
from masgrid._private.platform.results.storage import ResultsUnwritable  # the recorder itself (pyarrow) loads where it runs
from masgrid._private.platform.results.results_lock import ResultsLock
from masgrid._private.platform.run.run_status_actor import RunName
from masgrid._private.platform.cluster.ray_session import NAMESPACE

if TYPE_CHECKING:
    from masgrid._private.platform.sweeps.budget import SweepBudget

log = logging.getLogger(__name__)
#: session-wide actors (a recorder per results_dir, the host pool), kept alive here: an
#: actor whose last handle goes out of scope is destroyed, and a later lookup by name
#: could race with that.
_RECORDERS: dict[str, Any] = {}
#: recorders this process keeps for the results_dirs it wrote to, least recently used
#: first; past RECORDERS_KEPT the least recently used idle one is stopped. A notebook or a
#: test session writing to many results_dirs would otherwise hold an idle process (about
#: 200 MB) per directory for as long as it runs.
RECORDERS_KEPT = 4
_RECORDER_KEYS: OrderedDict[str, None] = OrderedDict()
#: recorder keys a run_many call of this process is using now (never stopped meanwhile)
_RECORDERS_IN_USE: Counter[str] = Counter()
#: warm driver processes kept between run_many calls (execution.reuse_actors)
MAX_IDLE_DRIVERS = 32
#: detached driver workers a sweep keeps on a joined cluster (its slots beyond get session workers)
MAX_WARM_DRIVERS = 16
#: how often a warm driver checks that the commands whose runs it executes are still alive
OWNER_CHECK_S = 0.5
#: executions of one run within a sweep when the platform keeps interrupting it
MAX_ATTEMPTS = 3
#: restart a dead session actor, and resend the calls it was serving (see the module doc)
SUPERVISED: dict[str, Any] = {"max_restarts": -1, "max_task_retries": -1}


def recorder_actor(results_dir: str) -> Any:
    """The single writer of a results_dir, pinned to this node (where the results live)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from masgrid._private.platform.results.recorder import Recorder

    root = str(Path(results_dir).resolve())
    key = recorder_key(root)
    if key in _RECORDERS:
        _RECORDER_KEYS.move_to_end(key)
        return _RECORDERS[key]
    name = "recorder:" + hashlib.sha1(root.encode()).hexdigest()[:12]
    node = ray.get_runtime_context().get_node_id()
    for attempt in range(20):
        actor = ray.remote(num_cpus=0, **SUPERVISED)(Recorder).options(
            name=name, namespace=NAMESPACE, get_if_exists=True, lifetime=None,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
        ).remote(root)
        try:
            ray.get(actor.ready.remote())  # type: ignore[attr-defined]  # Ray's actor methods are untyped
            break
        except ray.exceptions.RayActorError:  # the name still named a recorder stopped a moment ago
            if attempt == 19:
                raise
            time.sleep(0.25)
    _RECORDERS[key] = actor
    _RECORDER_KEYS[key] = None
    _stop_idle_recorders()
    return actor


def recorder_key(root: str) -> str:
    import ray

    return f"{ray.get_runtime_context().get_job_id()}:{root}"  # a new Ray session needs new actors


def _stop_idle_recorders() -> None:
    """Stop the least recently used recorders beyond RECORDERS_KEPT that no call is using."""
    import ray

    for key in list(_RECORDER_KEYS):
        if len(_RECORDER_KEYS) <= RECORDERS_KEPT:
            return
        if _RECORDERS_IN_USE[key]:
            continue
        del _RECORDER_KEYS[key]
        actor = _RECORDERS.pop(key, None)
        if actor is not None:
            ray.kill(actor, no_restart=True)


def release_session_actors() -> int:
    """Stop the actors this process keeps for its later sweeps: idle driver workers, the host
    pool (Ray stops the hosts it made with it, idle or kept by a driver) and the recorders no
    call is using. Each is a process that, idle, still takes about 0.7 % of a core and
    100-200 MB; a notebook or a test session done with sweeping hands them back here, and the
    next sweep starts new ones. Not while a sweep of this process runs. Returns how many
    actors were stopped."""
    import ray

    if not ray.is_initialized():
        return 0
    doomed: list[Any] = []
    for key in list(_RECORDERS):
        if key.endswith(":driver-workers"):
            doomed += _RECORDERS[key]
            _RECORDERS[key].clear()
        elif key.endswith(":pool") or not _RECORDERS_IN_USE[key]:
            doomed.append(_RECORDERS.pop(key))
            _RECORDER_KEYS.pop(key, None)
    for actor in doomed:
        try:
            ray.kill(actor, no_restart=True)
        except Exception as exc:  # noqa: BLE001 - an actor of an earlier Ray session
            log.debug("could not stop %s: %s", actor, exc)
    return len(doomed)


def host_pool() -> Any:
    """The session's pool of warm environment/agent hosts (`execution.reuse_actors`)."""
    import ray

    from masgrid._private.platform.sweeps.pool import HostPool

    key = f"{ray.get_runtime_context().get_job_id()}:pool"
    if key not in _RECORDERS:
        _RECORDERS[key] = ray.remote(num_cpus=0, **SUPERVISED)(HostPool).options(
            name="host-pool", namespace=NAMESPACE, get_if_exists=True).remote()
    return _RECORDERS[key]


def driver_actor(cfg: RunConfig, recorder: Any, attempt: int = 1) -> Any:
    """The run's own driver process, named `run:<run_id>` (a retry: `run:<run_id>#<attempt>`,
    since the dead attempt's name may not be free yet)."""
    import ray

    from masgrid._private.platform.sweeps.pool import DriverHosts

    pool = DriverHosts(host_pool()) if cfg.execution.reuse_actors else None
    return ray.remote(num_cpus=0)(RunDriver).options(
        name=f"run:{cfg.run_id}" + (f"#{attempt}" if attempt > 1 else ""), namespace=NAMESPACE, max_concurrency=16,
        resources=cfg.execution.driver_resources or None,
    ).remote(cfg, recorder, True, pool)


class DriverWorker:
    """A long-lived driver process executing runs one after another (warm-pool mode), so a
    run borrows an already-started process instead of starting one (bench_serving_concurrency)."""

    def __init__(self, pool: Any) -> None:
        from masgrid._private.platform.sweeps.pool import DriverHosts

        self.pool = DriverHosts(pool)  # keeps the hosts of its last run for the next one
        self.owners: dict[asyncio.Task[Any], str] = {}  # a warm run's task -> the job that submitted it
        self.watch: asyncio.Task[None] | None = None

    async def run(self, cfg: RunConfig, recorder: Any, owner: str | None = None) -> RunSummary:
        """`recorder`: its handle, or the name of a running one (a warm run: looked up here,
        where its class is loaded already, not in the command's process). `owner`: on a warm
        (detached) worker, the Ray job of the command that submitted the run; the run is
        cancelled when that job ends, and its writes are signed (Recorder.write_as)."""
        recorder = _actor(recorder)
        task = asyncio.current_task()
        if owner is not None and task is not None:
            recorder = SignedRecorder(recorder, owner)
            self.owners[task] = owner
            if self.watch is None or self.watch.done():
                self.watch = asyncio.ensure_future(self._watch_owners())
        after = cfg.execution.status_actor_after_s
        # the run's named status actor (run_status_actor.py); resolved per schedule, "auto" only if unresolved
        name = RunName(cfg.run_id, float(after)) if isinstance(after, (int, float)) else None
        try:
            with heap.run_in_process():  # several at once: execution.runs_per_driver
                summary = await RunDriver(cfg, recorder, True, self.pool, status=name).run()
        finally:
            self.owners.pop(task, None)  # type: ignore[arg-type]
            if name is not None:
                name.close()
        if not heap.runs_here():  # the run's objects are garbage now; the next run starts with a frozen heap
            heap.settle()
        return summary

    async def _watch_owners(self) -> None:
        """A detached worker outlives the command that submitted its runs: when that command
        dies (SIGKILL, Ctrl-C, a lost node), its runs here are cancelled (their hosts killed,
        nothing more recorded), instead of spending model calls nobody will collect and
        racing the re-run a resume starts."""
        from masgrid._private.platform.sweeps.warm import job_alive

        while self.owners:
            await asyncio.sleep(OWNER_CHECK_S)
            dead = {job for job in set(self.owners.values()) if not job_alive(job)}
            for task, job in list(self.owners.items()):
                if job in dead and not task.done():
                    log.warning("masgrid: cancelling a run of job %s: the command that submitted it is gone", job)
                    task.cancel()


class SignedRecorder:
    """A warm recorder's handle whose writes carry the submitting job (Recorder.write_as), so
    the recorder can refuse those of a dead command once a new one owns the results_dir."""

    def __init__(self, actor: Any, owner: str) -> None:
        self.actor, self.owner = actor, owner

    def __getattr__(self, method: str) -> Any:
        return SimpleNamespace(remote=partial(self.actor.write_as.remote, self.owner, method))


def run_local(cfg: RunConfig) -> RunSummary:
    """Everything in this process: no Ray at all (debugging, profiling)."""
    from masgrid._private.platform.results.recorder import Recorder

    with writer_locks([cfg]):
        if cfg.execution.prefix_cache == "reset_per_run" and cfg.agent_endpoints():
            for settings in cfg.agent_endpoints():
                reset_prefix_cache(settings)
            cfg.mark_prefix_cache_reset()
        return asyncio.run(RunDriver(cfg, Recorder(cfg.results_dir), False).run())


def run_one(cfg: RunConfig) -> RunSummary:
    """One run (`masgrid run`). On a cluster this process joined, it executes on warm actors
    left by the previous command, or leaves its own for the next one (platform/sweeps/warm.py)."""
    if cfg.execution.executor == "local":
        return run_local(cfg)
    return run_many([cfg], max_concurrent=1, keep_warm=cfg.execution.keep_warm)[0]


def _get_or_create(name: str, create: Callable[[], Any]) -> Any:
    """A named actor of namespace masgrid, made by `create` only when none answers to `name`
    (a lookup needs no class, so a warm start imports none of the actors' modules)."""
    import ray

    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return create()


def _warm_host_pool() -> Any:
    import ray

    from masgrid._private.platform.sweeps import warm

    def pool() -> Any:
        from masgrid._private.platform.sweeps.pool import HostPool

        return ray.remote(num_cpus=0, **SUPERVISED)(HostPool).options(**warm.options("host-pool")).remote(
            prefix=f"pool@{warm.fingerprint()}")

    return _get_or_create(warm.warm_name("host-pool"), pool)


def _warm_worker(role: str) -> Any:
    import ray

    from masgrid._private.platform.sweeps import warm

    return _get_or_create(warm.warm_name(role), lambda: ray.remote(num_cpus=0)(DriverWorker).options(
        **warm.options(role), max_concurrency=16).remote(_warm_host_pool()))


def warm_driver() -> Any:
    """The detached driver worker single runs share on a joined cluster, with its host pool."""
    from masgrid._private.platform.sweeps import warm

    warm.retire_stale()
    return _warm_worker("driver")


def warm_drivers(n: int) -> list[Any]:
    """`n` detached driver workers for a sweep's slots on a joined cluster: the one single
    runs share, then `driver-2`, ...; each keeps its own last hosts, all from the warm pool.
    The next sweep (or run) on the same cluster finds them started."""
    return [warm_driver(), *(_warm_worker(f"driver-{k}") for k in range(2, min(n, MAX_WARM_DRIVERS) + 1))]


def warm_recorder(results_dir: str) -> Any:
    """The detached recorder of a results_dir on a joined cluster (pinned to this node): its
    name when it runs already (a handle would load the recorder's class, pyarrow and all,
    into this process: `_actor` resolves it where it is used), else a new one's handle."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from masgrid._private.platform.sweeps import warm

    root = str(Path(results_dir).resolve())
    role = "recorder-" + hashlib.sha1(root.encode()).hexdigest()[:12]
    name = warm.warm_name(role)
    if any(a["name"] == name and a.get("namespace") == NAMESPACE
           for a in ray.util.list_named_actors(all_namespaces=True)):
        return name
    from masgrid._private.platform.results.recorder import Recorder

    node = ray.get_runtime_context().get_node_id()
    actor = ray.remote(num_cpus=0, **SUPERVISED)(Recorder).options(
        **warm.options(role), scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False)).remote(root)
    with _storage_errors_unwrapped():
        ray.get(actor.ready.remote())  # type: ignore[attr-defined]  # Ray's actor methods are untyped
    return actor


def _actor(handle_or_name: Any) -> Any:
    """An actor handle, looking a warm actor's name up in namespace masgrid."""
    if not isinstance(handle_or_name, str):
        return handle_or_name
    import ray

    return ray.get_actor(handle_or_name, namespace=NAMESPACE)


def _ensure_deployments(cfgs: list[RunConfig]) -> None:
    """backend=serve: the models' Serve apps must be up before drivers start: deployed here as
    one model phase when they are not (a sweep deploys them phase by phase before this)."""
    from masgrid._private.platform.sweeps.model_phases.runner import ensure_models, needs_phases

    if needs_phases(cfgs):
        ensure_models(cfgs)


def run_many(cfgs: Iterable[RunConfig], max_concurrent: int | None = 4,
             on_done: Callable[[RunConfig, RunSummary], None] | None = None,
             keep_warm: bool = False, admission: Admission = "fixed", gate: SweepBudget | None = None,
             ) -> list[RunSummary]:
    """Execute runs on Ray in submission order, holding each results_dir's writer lock
    (ResultsDirBusy if another process holds one). `admission="fixed"`: at most
    `max_concurrent` drivers at once (None: 4); `"load"` (sweeps): as many as each engine's
    load admits, `max_concurrent` the ceiling (platform/sweeps/admission.py). A run that calls a model
    whose runs are blocked waits; others behind it may start. `keep_warm`: on a joined cluster,
    use (or leave) the warm actors of platform/sweeps/warm.py. `gate`: a sweep's budget, asked before
    each run starts (platform/sweeps/budget.py); the runs it never lets start get no runs row."""
    cfgs = list(cfgs)
    if not cfgs:
        return []
    with writer_locks(cfgs):
        return _run_many(cfgs, max_concurrent, on_done, keep_warm, admission, gate)


@contextmanager
def writer_locks(cfgs: Iterable[RunConfig]) -> Iterator[None]:
    """Hold the one-writer lock of every results_dir the runs write (platform/results/results_lock.py)."""
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


def _run_many(cfgs: list[RunConfig], max_concurrent: int | None,
              on_done: Callable[[RunConfig, RunSummary], None] | None, keep_warm: bool = False,
              admission: Admission = "fixed", gate: SweepBudget | None = None) -> list[RunSummary]:
    from masgrid._private.platform.sweeps.sweep_execution import SweepExecution

    return SweepExecution(cfgs, max_concurrent, on_done, keep_warm, admission, gate).run()


def _ensure_endpoint_limits(cfgs: list[RunConfig]) -> None:
    """Make the session's endpoint-limit actor here when a run sets `model.max_connections`,
    so it belongs to this command and lives until its end, not to whichever agent host asks
    first (backends/endpoint_limit.py)."""
    if any(s.max_connections is not None for c in cfgs for s in c.agent_endpoints()):
        from masgrid._private.actors.backends.endpoint_limit import limits_actor

        limits_actor()


def _endpoints(cfg: RunConfig) -> list[str]:
    """The model endpoints a run calls (engine_alive.endpoint_name): none for scripted agents,
    several for a mixed-model team; a run is held once any of them was found lost."""
    from masgrid._private.platform.cluster.engine_alive import endpoint_name

    names = []
    for settings in cfg.agent_endpoints():
        try:
            names.append(endpoint_name(settings))
        except Exception:  # noqa: BLE001 - a serving config preflight has accepted; never fatal here
            continue
    return names


def _endpoint_settings(cfgs: list[RunConfig]) -> dict[str, Any]:
    """endpoint name (as _endpoints names it) -> the settings of its first run: what admission
    reads the load of and a reset resets."""
    from masgrid._private.platform.cluster.engine_alive import endpoint_name

    out: dict[str, Any] = {}
    for cfg in cfgs:
        for settings in cfg.agent_endpoints():
            try:
                out.setdefault(endpoint_name(settings), settings)
            except Exception:  # noqa: BLE001 - as in _endpoints
                continue
    return out


def engine_lost_error(lost: dict[str, str], cfgs: list[RunConfig], results: list[RunSummary | None],
                      held: list[int]) -> Exception:
    """The one line a sweep ends with when model endpoints were lost: which, why, and what a
    resume will run (the interrupted runs, recorded so, and those never started)."""
    from masgrid._private.platform.cluster.engine_alive import EngineLost

    interrupted = sum(r is not None and r.engine_lost is not None for r in results)
    recorded = sum(r is not None for r in results)
    endpoints = "; ".join(f"{endpoint} ({problem})" for endpoint, problem in lost.items())
    return EngineLost(f"the model endpoint stopped answering: {endpoints}; {recorded} of {len(cfgs)} run(s) recorded "
                      f"({interrupted} interrupted), {len(held)} not started: start the endpoint again and run the same "
                      "command to resume them",
                      next(iter(lost)), next(iter(lost.values())))


def storage_error(exc: BaseException) -> ResultsUnwritable | None:
    """The ResultsUnwritable behind an error a driver or the recorder raised, if any (the
    recorder's own, not Ray's wrapper of it, whose text is the remote traceback)."""
    from ray.exceptions import RayTaskError

    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ResultsUnwritable) and not isinstance(e, RayTaskError):
            return ResultsUnwritable(e.errno or 0, e.strerror or str(e))
        todo += [getattr(e, "cause", None), e.__cause__, e.__context__]
    return None


@contextmanager
def _storage_errors_unwrapped() -> Iterator[None]:
    """A recorder that cannot even create its tables raises ResultsUnwritable here, unwrapped."""
    try:
        yield
    except Exception as exc:
        unwritable = storage_error(exc)
        if unwritable is None:
            raise
        raise unwritable from None
