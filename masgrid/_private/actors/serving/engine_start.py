"""Why a vLLM engine behind Ray Serve refused to start, in one line, as soon as it says so.

vLLM checks its memory for the KV cache only once the weights are loaded, in the engine
core process the Serve replica starts; what reaches Serve (and its status) is the replica's
wrapper error, "Engine core initialization failed. See root cause above", while the root
cause itself goes to the replica's stderr only. Serve would then start the replica again
(`constructor_retries`) and fail the same way a minute later. So, while an app deploys, the
workers' output that Ray streams to drivers is read (a subscriber of our own: the driver may
run with `log_to_driver=False`), the engine's own exception line is taken from the app's
replicas, and where another attempt would fail the same way (`settled`: too little memory
for the KV cache) the caller stops the deployment at once. `explain` turns vLLM's KV-cache
messages into what to change in `model.serving`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

#: a line saying the engine (or one of its workers) could not start; the exception follows it
_FAILED = re.compile(r"failed to start|encountered a fatal error")
#: an exception line as vLLM's logger or a traceback prints it: "[core.py:1510] ValueError: ..."
_RAISED = re.compile(r"(?:^|\] )((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.+)$")
#: wrappers that point at the root cause instead of naming it
_WRAPPERS = ("Engine core initialization failed", "See root cause above", "Traceback (most recent call last)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VLLM_DOCS = re.compile(r"\s*See https://docs\.vllm\.ai\S*(?: for more details\.)?")

#: vLLM 0.11-0.32 (v1/core/kv_cache_utils.py): the KV cache cannot hold one request of max_model_len
KV_TOO_SMALL = re.compile(
    r"max seq len \((?P<len>\d+)\), \((?P<need>[\d.]+) GiB KV cache is needed, which is larger than the "
    r"available KV cache memory \((?P<have>[\d.]+) GiB\)\.(?: Based on the available memory, the estimated "
    r"maximum model length is (?P<fits>\d+)\.)?")
#: vLLM's CPU worker: VLLM_CPU_KVCACHE_SPACE (kv_cache_gib) is more than the node has free
NODE_TOO_SMALL = re.compile(
    r"Available memory on node (?P<node>\d+) \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on kv cache allocation "
    r"is less than requested memory for kv \((?P<asked>[\d.]+) GiB\)")
#: nothing left for the KV cache once the weights (and activations) are in memory
NO_CACHE_MEMORY = re.compile(r"No available memory for the cache blocks")


#: the handler through which a driver started with log_to_driver prints its workers' output
_PRINTER = "ray_print_logs"
#: seconds the app's replica and Serve controller output is held back while it deploys
HOLD_S = 10.0
#: seconds that output is still dropped after the engine refused (late tracebacks)
DROP_AFTER_S = 15.0


class EngineStartWatch:
    """Reads the stderr of one Serve app's replicas while it deploys; `cause` is the engine's
    own exception line once one has been printed, `seen_at` when (time.monotonic()).

    Where this driver prints its workers' output (log_to_driver), the lines of the app's
    replicas and of Serve's controller are held back `hold_s` seconds before they are
    printed: an engine that fails to start prints a traceback of a hundred lines there, twice
    (the replica's and the controller's), which would bury the one line saying why. Once the
    engine has refused, what is held and what still comes from those sources is dropped
    (Ray's log files keep it)."""

    def __init__(self, app: str, hold_s: float = HOLD_S) -> None:
        self.prefix = f"ServeReplica:{app}:"
        self.hold_s = hold_s
        self.cause: str | None = None
        self.seen_at: float | None = None
        self._failing: set[str] = set()  # pids whose output said the engine failed to start
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._subscriber: Any = None
        self._printer: Any = None  # Ray's own printing handler, while ours stands in
        self._held: list[tuple[float, Any]] = []
        self._lock = threading.Lock()

    def __enter__(self) -> EngineStartWatch:
        try:
            import ray

            worker = ray._private.worker.global_worker
            # private Ray API (the log stream the driver prints from); absent in a future Ray: caught below
            self._subscriber = ray._raylet.GcsLogSubscriber(  # type: ignore[attr-defined]
                worker_id=ray.WorkerID.from_random().binary(),
                address=worker.gcs_client.address)  # type: ignore[attr-defined]
            self._subscriber.subscribe()
        except Exception as exc:  # noqa: BLE001 - a Ray without this API: Serve's own status still tells
            log.debug("cannot read the replicas' output (%s); the deployment's status alone will say why", exc)
            self._subscriber = None
            return self
        self._hold()
        self._thread = threading.Thread(target=self._read, name="masgrid-engine-start", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._subscriber is not None:
            try:
                self._subscriber.close()
            except Exception:  # noqa: BLE001 - already closed with the Ray session
                pass
        if self.cause is None:
            self._release(everything=True)
            self._restore()
        elif self._printer is not None:  # the failure's late tracebacks are dropped too
            threading.Timer(DROP_AFTER_S, self._restore).start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                batch = self._subscriber.poll(timeout=0.5)
            except Exception:  # noqa: BLE001 - Ray shut down under us
                return
            if batch and str(batch.get("actor_name") or "").startswith(self.prefix):
                self.feed(str(batch.get("pid")), batch.get("lines") or [])
            self._release()

    # -- what this driver prints meanwhile ------------------------------------------------
    def _hold(self) -> None:
        try:
            from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher
        except ImportError:
            return
        printer = next((h for name, h in dispatcher.handlers if name == _PRINTER), None)
        if printer is None:
            return  # log_to_driver=False: nothing is printed here anyway
        self._printer = printer
        dispatcher.remove_handler(_PRINTER)
        dispatcher.add_handler(_PRINTER, self._route)  # Ray's shutdown removes it by this name

    def _route(self, data: dict[str, Any]) -> None:
        source = str(data.get("actor_name") or "")
        if not (source.startswith(self.prefix) or source.startswith("ServeController")):
            self._printer(data)
            return
        with self._lock:
            if self.cause is None:
                self._held.append((time.monotonic(), data))

    def _release(self, everything: bool = False) -> None:
        """Print what has been held `hold_s` (or all of it); drop it all once the engine refused."""
        with self._lock:
            if self.cause is not None:
                self._held.clear()
                return
            cut = time.monotonic() - (0 if everything else self.hold_s)
            due = [data for at, data in self._held if at <= cut]
            self._held = [(at, data) for at, data in self._held if at > cut]
        for data in due:
            self._printer(data)

    def _restore(self) -> None:
        from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

        if any(name == _PRINTER and h == self._route for name, h in dispatcher.handlers):
            dispatcher.remove_handler(_PRINTER)
            dispatcher.add_handler(_PRINTER, self._printer)

    def feed(self, pid: str, lines: list[str]) -> None:
        """One batch of a replica's output lines (the parsing, apart from Ray for the tests)."""
        for raw in lines:
            line = _ANSI.sub("", raw).rstrip()
            if _FAILED.search(line):
                self._failing.add(pid)
                continue
            if pid not in self._failing or self.cause is not None:
                continue
            match = _RAISED.search(line)
            if match and not any(w in line for w in _WRAPPERS):
                self.cause = f"{match.group(1).rsplit('.', 1)[-1]}: {_VLLM_DOCS.sub('', match.group(2)).strip()}"
                self.seen_at = time.monotonic()
                log.debug("the engine of %s refused to start: %s", self.prefix.rstrip(":"), self.cause)


def settled(cause: str) -> bool:
    """Whether another attempt would fail the same way (the memory the settings give the KV
    cache does not change between attempts): the deploy stops at once. Other refusals go
    through Serve's `constructor_retries` (a port or a node may free up), and the line
    still names the engine's cause."""
    return any(p.search(cause) for p in (KV_TOO_SMALL, NODE_TOO_SMALL, NO_CACHE_MEMORY))


def explain(cause: str, kv_cache_gib: int | None) -> str:
    """The engine's refusal as what to change: vLLM's KV-cache messages name gpu_memory_utilization
    (and say it sets CPU memory too, which the CPU build reads from VLLM_CPU_KVCACHE_SPACE,
    i.e. `kv_cache_gib`); anything else is the engine's own line."""
    if m := KV_TOO_SMALL.search(cause):
        fits = f" (at most {int(m['fits']):,} tokens fit)" if m["fits"] else ""
        knob = (f"raise model.serving.kv_cache_gib (now {kv_cache_gib})" if kv_cache_gib is not None
                else "raise model.serving.engine.gpu_memory_utilization or spread the model over more GPUs (layout)")
        return (f"too little memory for the KV cache: one request of engine.max_model_len={int(m['len']):,} tokens "
                f"needs {m['need']} GiB, the engine has {m['have']} GiB: {knob}, or lower "
                f"model.serving.engine.max_model_len{fits}")
    if m := NODE_TOO_SMALL.search(cause):
        return (f"too little memory for the KV cache: model.serving.kv_cache_gib={kv_cache_gib} asks {m['asked']} GiB, "
                f"node {m['node']} has {m['free']} of {m['total']} GiB free: lower model.serving.kv_cache_gib")
    if NO_CACHE_MEMORY.search(cause):
        knob = ("raise model.serving.kv_cache_gib" if kv_cache_gib is not None
                else "raise model.serving.engine.gpu_memory_utilization or spread the model over more GPUs (layout)")
        return f"too little memory for the KV cache: none is left once the weights are loaded: {knob}"
    return f"the engine refused to start: {cause}"
