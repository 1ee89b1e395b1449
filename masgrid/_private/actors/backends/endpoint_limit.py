"""One adaptive connection limit per model endpoint, shared by every process of a sweep.

A hosted API limits how fast a key may call it. Each agent's client retrying on its own
turns one rate limit into a storm of 429s (100 agents of a round, times the runs in
flight), and every refused request is paid for with a retry. So every HTTP request to an
endpoint (base URL and model) with `model.max_connections` set first takes a slot of that
endpoint's limit, wherever the agent runs: the limit lives in one named Ray actor
(`EndpointLimits`), which all agent hosts, drivers and nodes of the Ray session reach by
name; without Ray (`execution.executor=local`) it lives in the process.

The rule (additive increase, multiplicative decrease, as TCP adapts its window, with a
slow approach to the level that was last too much):

- the limit starts at `model.max_connections`, its ceiling, and never goes below 1;
- a request refused for load (HTTP 429, 503 or 529) or one that timed out halves it, once
  per round trip: requests sent before the last decrease do not decrease it again, so the
  burst that met a full quota counts as one signal, not as a collapse to 1. The limit it
  had is remembered as the last level that was too much;
- each request answered otherwise raises it by 1/limit (about +1 per limit's worth of
  answers) while it is more than one below that level, and by a tenth of that within one
  of it: the limit comes back quickly after a refusal but probes the level that failed
  slowly, so the endpoint is not pushed over its quota every few seconds. Past that level
  by more than one, the level is forgotten (the provider's capacity grew). Never above the
  ceiling;
- a `Retry-After` (seconds or an HTTP date, at most 60 s) pauses the whole endpoint: no
  request of any run is sent until it has passed, not only the refused one's retry.

A slot whose holder died (a killed process or node never releases it) is taken back
`HOLD_MARGIN_S` after its attempt's deadline (`model.timeout_s`): a live holder releases
within that deadline, so nothing alive loses its slot, and the limit never shrinks for good.

Waiting for a slot is our own queueing, not the model's latency: it is returned with each
slot and recorded as `queue_s`, apart from `latency_s` (backends/retry.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol

log = logging.getLogger(__name__)

#: how one request ended, as the limit learns from it
Outcome = Literal["answered", "overloaded", "timeout", "failed", "cancelled"]
#: statuses a provider sends when it is over its limit or overloaded (529: Anthropic's "overloaded")
OVERLOAD_STATUSES = frozenset({429, 503, 529})
#: the longest endpoint-wide pause a Retry-After may ask for (as the per-call retry honours)
MAX_PAUSE_S = 60.0
#: a slot is taken back this long after its attempt's deadline when its holder never released it
HOLD_MARGIN_S = 10.0
#: within one of the level that was last too much, the limit rises this many times slower
PROBE_SLOWDOWN = 10.0
ACTOR_NAME = "masgrid-endpoint-limits"
NAMESPACE = "masgrid"  # of masgrid's session actors (platform/sweeps/ray_runs.py); not imported: a host never loads ray_runs


@dataclass(frozen=True)
class Slot:
    """A granted request slot: which decrease epoch it was sent in, and how long it waited."""

    endpoint: str
    epoch: int
    waited_s: float
    id: int = 0
    #: the EndpointLimits that granted it: a slot of a dead one, released to its successor, is ignored
    owner: str = ""


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for (delay seconds or an HTTP date), capped at
    MAX_PAUSE_S; None when absent, unreadable or not in the future."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - (time.time() if now is None else now)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    if seconds != seconds or seconds <= 0:  # NaN or past
        return None
    return min(seconds, MAX_PAUSE_S)


class AdaptiveLimit:
    """The limit of one endpoint (see the module doc for the rule). Not thread-safe: one
    event loop owns it (the actor's, or the process's)."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = float(ceiling)
        #: slot id -> time.monotonic() after which it is taken back unreleased: its holder died
        #: (a killed process or node never releases), since a live one releases within its
        #: attempt's deadline
        self.held: dict[int, float] = {}
        self.next_id = 1
        self.epoch = 0  # number of decreases so far
        self.too_much: float | None = None  # the limit when load was last refused
        self.paused_until = 0.0  # time.monotonic() before which no request is sent
        self.waiting = 0
        self.counts = {"granted": 0, "overloaded": 0, "timeout": 0, "decreases": 0, "pauses": 0, "reclaimed": 0}
        self._changed = asyncio.Condition()

    def set_ceiling(self, ceiling: int) -> None:
        """A later sweep may set another ceiling: the limit stays within it."""
        self.ceiling = ceiling
        self.limit = min(self.limit, float(ceiling))

    @property
    def in_use(self) -> int:
        return len(self.held)

    def _reclaim(self, now: float) -> float | None:
        """Take back slots held past their deadline; the earliest deadline left, if any."""
        for slot_id, deadline in list(self.held.items()):
            if deadline <= now:
                del self.held[slot_id]
                self.counts["reclaimed"] += 1
        return min(self.held.values(), default=None)

    async def acquire(self, endpoint: str, hold_s: float = 3600.0) -> Slot:
        """A slot, once the endpoint is not paused and fewer than `limit` are held; `hold_s`:
        how long the holder may keep it at most (its attempt's deadline and some margin)."""
        start = time.monotonic()
        self.waiting += 1
        try:
            async with self._changed:
                while True:
                    now = time.monotonic()
                    earliest = self._reclaim(now)
                    pause = self.paused_until - now
                    if pause <= 0 and self.in_use < int(self.limit):
                        break
                    # wake when the pause ends (else when a held slot expires), or earlier on a release
                    wake = pause if pause > 0 else None if earliest is None else max(0.0, earliest - now)
                    try:
                        await asyncio.wait_for(self._changed.wait(), wake)
                    except TimeoutError:
                        pass
                slot_id, self.next_id = self.next_id, self.next_id + 1
                self.held[slot_id] = time.monotonic() + hold_s
                self.counts["granted"] += 1
        finally:
            self.waiting -= 1
        return Slot(endpoint, self.epoch, time.monotonic() - start, slot_id)

    async def release(self, slot: Slot, outcome: Outcome, retry_after: float | None = None) -> None:
        if self.held.pop(slot.id, None) is None:  # taken back already, or never granted here
            return
        if outcome in ("overloaded", "timeout"):
            self.counts[outcome] += 1
            if slot.epoch == self.epoch:  # sent under the current limit: a new signal
                self.too_much = self.limit
                self.limit = max(1.0, self.limit / 2)
                self.epoch += 1
                self.counts["decreases"] += 1
        elif outcome == "answered":
            self.limit = min(float(self.ceiling), self.limit + increase(self.limit, self.too_much))
            if self.too_much is not None and self.limit > self.too_much + 1:
                self.too_much = None
        if retry_after:
            until = time.monotonic() + min(retry_after, MAX_PAUSE_S)
            if until > self.paused_until:
                self.paused_until = until
                self.counts["pauses"] += 1
        async with self._changed:
            self._changed.notify_all()

    def snapshot(self) -> dict[str, Any]:
        return {"ceiling": self.ceiling, "limit": self.limit, "too_much": self.too_much, "in_use": self.in_use,
                "waiting": self.waiting,
                "paused_s": max(0.0, self.paused_until - time.monotonic()), **self.counts}


def increase(limit: float, too_much: float | None) -> float:
    """What one answered request adds to the limit (see the module doc)."""
    step = 1.0 / limit
    return step / PROBE_SLOWDOWN if too_much is not None and limit >= too_much - 1 else step


class EndpointLimits:
    """Every endpoint's limit in one place (one actor per Ray session, one object without Ray)."""

    def __init__(self) -> None:
        self.limits: dict[str, AdaptiveLimit] = {}
        self.owner = uuid.uuid4().hex  # slot ids restart with a new actor: this tells them apart

    def _limit(self, endpoint: str, ceiling: int) -> AdaptiveLimit:
        limit = self.limits.get(endpoint)
        if limit is None:
            limit = self.limits[endpoint] = AdaptiveLimit(ceiling)
        elif limit.ceiling != ceiling:
            limit.set_ceiling(ceiling)
        return limit

    async def acquire(self, endpoint: str, ceiling: int, hold_s: float = 3600.0) -> Slot:
        slot = await self._limit(endpoint, ceiling).acquire(endpoint, hold_s)
        return replace(slot, owner=self.owner)

    async def release(self, slot: Slot, outcome: Outcome, retry_after: float | None = None) -> None:
        limit = self.limits.get(slot.endpoint)
        if limit is not None and slot.owner == self.owner:
            await limit.release(slot, outcome, retry_after)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {endpoint: limit.snapshot() for endpoint, limit in self.limits.items()}


class Gate(Protocol):
    """What a backend's retry loop asks before each request (backends/retry.py)."""

    async def acquire(self) -> Slot: ...

    def release(self, slot: Slot, outcome: Outcome, retry_after: float | None = None) -> None: ...


def endpoint_key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')} {model}"


class LocalGate:
    """The gate of a process without Ray: its own EndpointLimits."""

    def __init__(self, limits: EndpointLimits, endpoint: str, ceiling: int, hold_s: float = 3600.0) -> None:
        self.limits, self.endpoint, self.ceiling, self.hold_s = limits, endpoint, ceiling, hold_s

    async def acquire(self) -> Slot:
        return await self.limits.acquire(self.endpoint, self.ceiling, self.hold_s)

    def release(self, slot: Slot, outcome: Outcome, retry_after: float | None = None) -> None:
        asyncio.get_running_loop().create_task(self.limits.release(slot, outcome, retry_after))


class SharedGate:
    """The gate of a Ray process: the session's EndpointLimits actor. If the actor cannot be
    reached the request goes out unlimited (logged once): a limit must never fail a call."""

    def __init__(self, endpoint: str, ceiling: int, hold_s: float = 3600.0) -> None:
        self.endpoint, self.ceiling, self.hold_s = endpoint, ceiling, hold_s
        self._actor: Any = None
        self._warned = False
        self._pending: set[asyncio.Task[Any]] = set()

    async def acquire(self) -> Slot:
        start = time.monotonic()
        for attempt in range(2):  # a second try looks the actor up afresh (an earlier command's died)
            ref = None
            try:
                if self._actor is None:
                    self._actor = limits_actor()
                ref = self._actor.acquire.remote(self.endpoint, self.ceiling, self.hold_s)
                return await ref
            except asyncio.CancelledError:
                if ref is not None:  # granted later all the same: give the slot back then
                    self._give_back_when_granted(ref)
                raise
            except Exception as exc:  # noqa: BLE001 - the actor died or is unreachable
                self._actor = None
                forget_actor()
                if attempt == 1 and not self._warned:
                    self._warned = True
                    log.warning("the endpoint limit of %s is unreachable (%s): requests go out unlimited",
                                self.endpoint, exc)
        return Slot(self.endpoint, -1, time.monotonic() - start)

    def release(self, slot: Slot, outcome: Outcome, retry_after: float | None = None) -> None:
        if slot.epoch < 0 or self._actor is None:
            return
        try:
            self._actor.release.remote(slot, outcome, retry_after)
        except Exception:  # noqa: BLE001 - as in acquire
            self._actor = None

    def _give_back_when_granted(self, ref: Any) -> None:
        async def give_back() -> None:
            try:
                slot = await ref
            except Exception:  # noqa: BLE001 - nothing was granted
                return
            self.release(slot, "cancelled")

        task = asyncio.get_running_loop().create_task(give_back())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


_LOCAL = EndpointLimits()


def limits_actor() -> Any:
    """The session's EndpointLimits actor, made on first use, on this node. The sweep's own
    process makes it before any run starts (platform/sweeps/ray_runs.py), so it lives on the sweep's
    node for as long as the sweep's job. Pinned: a soft preference let Ray place it on any
    node, where losing that node lost every limit. If its node is lost all the same, the
    gates find it dead, and the next request makes a new one."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    session = _session()
    if session not in _HANDLE:  # first use in this Ray session (a handle of an earlier one is void)
        _HANDLE.clear()
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        _HANDLE[session] = ray.remote(EndpointLimits).options(
            name=ACTOR_NAME, namespace=NAMESPACE, get_if_exists=True, lifetime=None, num_cpus=0,
            max_concurrency=100_000, max_restarts=-1, scheduling_strategy=here).remote()
    return _HANDLE[session]


#: this process's handle of the limits actor per Ray session, kept: Ray destroys an actor
#: whose last handle is gone, and its limits with it (a later lookup would make a fresh one)
_HANDLE: dict[str, Any] = {}


def _session() -> str:
    import ray

    node = getattr(ray._private.worker.global_worker, "node", None)
    return f"{getattr(node, 'session_name', '?')}:{ray.get_runtime_context().get_job_id()}"


def forget_actor() -> None:
    """Drop the kept handle (the actor died): the next use looks it up again."""
    _HANDLE.clear()


def gate_for(base_url: str | None, model: str, ceiling: int | None, timeout_s: float = 120.0) -> Gate | None:
    """The gate of an endpoint with `model.max_connections` set; None: no shared limit. A
    slot is taken back from a holder that has not released it well past its attempt's
    deadline (`timeout_s`): a process or node that died with it."""
    if ceiling is None or not base_url:
        return None
    endpoint = endpoint_key(base_url, model)
    hold_s = timeout_s + HOLD_MARGIN_S
    try:
        import ray

        if ray.is_initialized():
            return SharedGate(endpoint, ceiling, hold_s)
    except ImportError:  # pragma: no cover - Ray is a dependency
        pass
    return LocalGate(_LOCAL, endpoint, ceiling, hold_s)


def outcome_of(http_status: int | None, error_class: str | None) -> Outcome:
    """What a finished request tells the limit."""
    if error_class is None:
        return "answered"
    if http_status in OVERLOAD_STATUSES or error_class == "http_429":
        return "overloaded"
    if error_class == "timeout":
        return "timeout"
    return "failed"
