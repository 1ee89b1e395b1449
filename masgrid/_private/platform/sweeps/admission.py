"""How many runs a sweep keeps in flight: as many as each engine takes, read from its own load.

`sweep.admission=load` (the default of sweeps): for each model endpoint the sweep reads the
engine's load every `POLL_S` seconds in a thread of the process running `run_many` (never
per turn), and keeps a limit on the runs in flight against that endpoint:

- it starts at `START_LIMIT` (never above the ceiling);
- a reading with no request waiting while the limit is reached (and runs are pending) raises
  it by half (4, 6, 9, 13, 19, 28, ...: the ceiling within a few seconds when the engine
  has room);
- waiting requests on `BACKOFF_READINGS` readings in a row lower it to three quarters of the
  runs in flight (runs already started go on; the sweep starts fewer until the queue is
  gone);
- it never goes below 1 (the floor: an endpoint with pending runs always has one in flight)
  nor above the ceiling: `sweep.max_concurrent` when set (over the whole sweep, as always),
  else `auto_ceiling()`: `AUTO_CEILING` runs, but no more than `PROCESSES_PER_CPU` processes
  per CPU of the Ray cluster hold (a run with its components as actors holds its driver, its
  environment and its agent hosts; runs with components in the driver share a process
  `runs_per_driver` at a time), and never fewer than the fixed default of 4. On the 2-core
  development machine: 4 runs of three processes, 32 of sequential runs packed four to a
  process.

What "waiting" means per kind of endpoint:

- an OpenAI endpoint (`backend=openai`, any base_url): vLLM's Prometheus text at
  `<root>/metrics` (`vllm:num_requests_running`, `vllm:num_requests_waiting`, summed over
  its engines);
- a Serve app masgrid deployed (`backend=serve`, handle or HTTP route): Serve's own count of
  the requests each replica is executing (`get_num_ongoing_requests` on the replica actors);
  the requests beyond what the engines batch at once (`max_num_seqs` when the preset sets it
  in `model.serving.engine.extra`, else vLLM's server default: 128 per CPU worker, 256 per
  GPU replica) count as waiting. Serve LLM replicas export vLLM's own gauges only through
  Ray's metrics pipeline (seconds late), so this is the reading.

Runs without an endpoint (scripted agents) and endpoints whose load cannot be read (no
/metrics, not vLLM) keep the fixed limit: `sweep.max_concurrent`, else `FIXED_DEFAULT` (the
old default, 4); the first failed reading of an endpoint says so in one log line.
`sweep.admission=fixed` turns all of this off: exactly the fixed limit, as before.
`execution.prefix_cache=reset_per_run` holds each endpoint at one run in flight.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Literal
from collections.abc import Callable, Iterable

from masgrid._private.actors.backends.base import BackendSettings

log = logging.getLogger(__name__)

#: seconds between two readings of an endpoint's load
POLL_S = 0.5
#: runs in flight per endpoint when a sweep starts (the fixed default of earlier releases)
START_LIMIT = 4
#: the ceiling on runs in flight when `sweep.max_concurrent` is not set and loads are read ...
AUTO_CEILING = 32
#: ... and no more runs than take this many processes per CPU of the Ray cluster (auto_ceiling)
PROCESSES_PER_CPU = 4
#: runs in flight when loads are not read (scripted runs, an unreadable endpoint, admission=fixed)
FIXED_DEFAULT = 4
#: readings in a row with waiting requests before the limit is lowered
BACKOFF_READINGS = 2
#: seconds one reading may take
READ_TIMEOUT_S = 2.0
#: vLLM's default max_num_seqs for its OpenAI server: per CPU worker, per GPU replica (engine/arg_utils.py)
VLLM_SEQS_CPU = 128
VLLM_SEQS_GPU = 256

Admission = Literal["load", "fixed"]


@dataclass(frozen=True)
class Load:
    """An engine's requests: being generated, and queued behind them."""

    running: int
    waiting: int


_GAUGE = re.compile(r"^vllm:(num_requests_running|num_requests_waiting)(?:\{[^}]*\})? ([0-9.eE+-]+)$", re.MULTILINE)


def parse_vllm_metrics(text: str) -> Load | None:
    """running and waiting requests from vLLM's Prometheus text (summed over its engines and
    models); None when the text has neither gauge (not a vLLM server)."""
    sums = {"num_requests_running": 0.0, "num_requests_waiting": 0.0}
    seen = set()
    for name, value in _GAUGE.findall(text):
        sums[name] += float(value)
        seen.add(name)
    if not seen:
        return None
    return Load(int(sums["num_requests_running"]), int(sums["num_requests_waiting"]))


def metrics_url(base_url: str) -> str:
    """vLLM serves /metrics at the root its OpenAI routes (`/v1`) hang from."""
    root = base_url.rstrip("/")
    return f"{root.removesuffix('/v1')}/metrics"


class LoadReader:
    """Reads one endpoint's load; `read()` raises LoadUnreadable with the reason."""

    kind = "?"

    def read(self) -> Load:
        raise NotImplementedError


class LoadUnreadable(RuntimeError):
    pass


class VllmMetricsReader(LoadReader):
    kind = "vLLM /metrics"

    def __init__(self, base_url: str) -> None:
        self.url = metrics_url(base_url)

    def read(self) -> Load:
        try:
            with urllib.request.urlopen(self.url, timeout=READ_TIMEOUT_S) as response:
                text = response.read().decode("utf-8", "replace")
        except (OSError, ValueError) as exc:
            raise LoadUnreadable(f"GET {self.url}: {type(exc).__name__}: {exc}"[:200]) from None
        load = parse_vllm_metrics(text)
        if load is None:
            raise LoadUnreadable(f"GET {self.url}: no vllm:num_requests_running/waiting gauges (not a vLLM server?)")
        return load


class ServeReplicasReader(LoadReader):
    """A Serve app's deployment: the sum of its replicas' ongoing requests; those beyond
    `slots` per replica (the engine's batch) count as waiting."""

    kind = "Serve replicas"
    #: seconds between two listings of the deployment's replica actors
    LIST_EVERY_S = 5.0

    def __init__(self, app: str, deployment: str, slots: int) -> None:
        self.prefix = f"SERVE_REPLICA::{app}#{deployment}#"
        self.slots = slots
        self.replicas: list[Any] = []
        self.listed = -float("inf")

    def _replicas(self) -> list[Any]:
        import ray

        if time.monotonic() - self.listed > self.LIST_EVERY_S or not self.replicas:
            names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                     if a.get("namespace") == "serve" and a["name"].startswith(self.prefix)]
            self.replicas = [ray.get_actor(name, namespace="serve") for name in names]
            self.listed = time.monotonic()
        return self.replicas

    def read(self) -> Load:
        import ray

        try:
            replicas = self._replicas()
            if not replicas:
                raise LoadUnreadable(f"no running replica named {self.prefix}*")
            counts = ray.get([r.get_num_ongoing_requests.remote() for r in replicas], timeout=READ_TIMEOUT_S)
        except LoadUnreadable:
            raise
        except Exception as exc:  # noqa: BLE001 - a replica replaced or gone: list again next time
            self.replicas = []
            raise LoadUnreadable(f"Serve replicas {self.prefix}*: {type(exc).__name__}: {exc}"[:200]) from None
        return Load(sum(min(int(c), self.slots) for c in counts), sum(max(0, int(c) - self.slots) for c in counts))


def reader_for(settings: BackendSettings) -> LoadReader | None:
    """The load reader of an endpoint; None for kinds that report no load (the CPU stand-in)."""
    if settings.base_url:
        return VllmMetricsReader(settings.base_url)
    from masgrid._private.actors.serving.deploy import target
    from masgrid._private.actors.serving.spec import parse_serving

    spec = parse_serving(settings.serving)
    if spec.kind != "vllm":
        return None
    app, deployment = target(settings, spec)
    return ServeReplicasReader(app, deployment, engine_slots(spec))


def engine_slots(spec: Any) -> int:
    """Requests one replica's engine batches at once: max_num_seqs when the preset sets it, else
    vLLM's server default for the accelerator (per CPU worker; a GPU replica's default)."""
    set_here = spec.engine.extra.get("max_num_seqs")
    if isinstance(set_here, int) and set_here > 0:
        return set_here
    if spec.accelerator == "cpu":
        return VLLM_SEQS_CPU * spec.parallelism.tensor_parallel_size
    return VLLM_SEQS_GPU


def auto_ceiling(processes_per_run: float, cpus: float) -> int:
    """The ceiling on runs in flight when sweep.max_concurrent is unset (see the module doc)."""
    by_processes = int(PROCESSES_PER_CPU * cpus / max(processes_per_run, 1e-9))
    return max(FIXED_DEFAULT, min(AUTO_CEILING, by_processes))


def processes_per_run(components: str, runs_per_driver: int, agents: int, agents_per_actor: int) -> float:
    """Ray worker processes one run in flight holds: its driver (shared by runs_per_driver runs
    with the components inside), else the driver, the environment and its agent hosts."""
    if components == "driver":
        return 1 / max(1, runs_per_driver)
    return 2 + -(-agents // max(1, agents_per_actor))


@dataclass
class EndpointState:
    name: str
    reader: LoadReader | None
    limit: int
    in_flight: int = 0
    load: Load | None = None
    reading: int = 0  # readings taken so far
    waited: int = 0  # readings in a row with waiting requests
    unreadable: str | None = None  # why the load could not be read (fixed limit then)
    peak: int = 0  # most runs in flight at once
    limits: list[int] = field(default_factory=list)  # every limit it took, in order (tests, logs)


class AdmissionControl:
    """Which queued run may start now (see the module doc). `endpoints_of(cfg)` names the
    endpoints a run calls (ray_runs._endpoints); `settings_of[name]` their settings."""

    def __init__(self, mode: Admission, max_concurrent: int | None, settings_of: dict[str, BackendSettings],
                 one_at_a_time: bool = False, poll_s: float = POLL_S,
                 readers: Callable[[BackendSettings], LoadReader | None] = reader_for,
                 auto: int = AUTO_CEILING) -> None:
        self.mode = mode
        self.fixed = max_concurrent or FIXED_DEFAULT
        self.ceiling = max_concurrent or (auto if mode == "load" and settings_of else FIXED_DEFAULT)
        self.one_at_a_time = one_at_a_time
        self.poll_s = poll_s
        self.endpoints: dict[str, EndpointState] = {}
        for name, settings in settings_of.items():
            reader = readers(settings) if mode == "load" and not one_at_a_time else None
            state = EndpointState(name, reader, 1 if one_at_a_time else min(self.ceiling, START_LIMIT)
                                  if reader is not None else self.fixed)
            if mode == "load" and reader is None and not one_at_a_time:
                state.unreadable = "this kind of endpoint reports no load"
                log.info("masgrid: admission: %s reports no load; at most %d run(s) in flight against it "
                         "(sweep.max_concurrent)", name, state.limit)
            state.limits.append(state.limit)
            self.endpoints[name] = state
        self.scripted_in_flight = 0
        self.total = 0
        self.pending: Callable[[str], bool] = lambda _name: True
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if any(s.reader is not None for s in self.endpoints.values()):
            self._thread = threading.Thread(target=self._poll, name="masgrid-admission", daemon=True)
            self._thread.start()

    @property
    def reads_load(self) -> bool:
        return self._thread is not None

    def describe(self) -> str:
        """One phrase for the sweep's first progress line."""
        if self.one_at_a_time:
            return "one run at a time per engine (execution.prefix_cache=reset_per_run)"
        if self.mode == "fixed" or not self.reads_load:
            return f"at most {self.ceiling} at once"
        return (f"runs in flight following each engine's load (from {START_LIMIT} up to {self.ceiling} at once, "
                "sweep.max_concurrent)")

    # -- the sweep's side ------------------------------------------------------------------
    def full(self) -> bool:
        """The ceiling over the whole sweep is reached."""
        return self.total >= self.ceiling

    def initial_slots(self, scripted: bool = True) -> int:
        """Runs that may be in flight at the start (warm driver processes to fetch up front);
        `scripted`: some runs call no endpoint."""
        slots = sum(max(1, s.limit) for s in self.endpoints.values()) + (self.fixed if scripted else 0)
        return min(self.ceiling, slots)

    def may_start(self, endpoints: Iterable[str]) -> bool:
        """Whether a run calling these endpoints may start now."""
        names = list(endpoints)
        with self._lock:
            if self.total >= self.ceiling:
                return False
            if not names:
                return self.scripted_in_flight < self.fixed
            for name in names:
                state = self.endpoints.get(name)
                if state is None:
                    continue
                if state.in_flight >= max(1, state.limit):  # the floor: a run may start where none is in flight
                    return False
            return True

    def started(self, endpoints: Iterable[str]) -> None:
        self._count(endpoints, +1)

    def ended(self, endpoints: Iterable[str]) -> None:
        self._count(endpoints, -1)

    def _count(self, endpoints: Iterable[str], step: int) -> None:
        names = list(endpoints)
        with self._lock:
            self.total += step
            if not names:
                self.scripted_in_flight += step
            for name in names:
                state = self.endpoints.get(name)
                if state is not None:
                    state.in_flight += step
                    state.peak = max(state.peak, state.in_flight)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=READ_TIMEOUT_S + 1)
        for state in self.endpoints.values():
            if state.reader is not None and state.peak:
                log.info("masgrid: admission: %s: at most %d run(s) were in flight (limits %s)", state.name,
                         state.peak, ", ".join(map(str, state.limits[-12:])))

    # -- the poller's side -----------------------------------------------------------------
    def _poll(self) -> None:
        while not self._stop.is_set():
            for state in list(self.endpoints.values()):
                if state.reader is not None and state.unreadable is None:
                    self.observe(state, self._read(state))
            self._stop.wait(self.poll_s)

    def _read(self, state: EndpointState) -> Load | None:
        assert state.reader is not None
        try:
            return state.reader.read()
        except LoadUnreadable as exc:
            with self._lock:
                state.unreadable = str(exc)
                state.limit = self.fixed
                state.limits.append(state.limit)
            log.warning("masgrid: admission: cannot read the load of %s (%s); keeping at most %d run(s) in flight "
                        "against it (sweep.max_concurrent)", state.name, exc, self.fixed)
            return None

    def observe(self, state: EndpointState, load: Load | None) -> None:
        """Apply one reading to an endpoint's limit (the rule of the module doc)."""
        if load is None:
            return
        with self._lock:
            state.load = load
            state.reading += 1
            if load.waiting > 0:
                state.waited += 1
                if state.waited >= BACKOFF_READINGS:
                    state.waited = 0
                    base = min(state.limit, max(1, state.in_flight))
                    new = max(1, (3 * base) // 4)
                    if new != state.limit:
                        state.limit = new
                        state.limits.append(new)
                return
            state.waited = 0
            if state.in_flight >= state.limit and state.limit < self.ceiling and self.pending(state.name):
                state.limit = min(self.ceiling, state.limit + max(1, state.limit // 2))
                state.limits.append(state.limit)
