"""One retry policy for every HTTP client: a total deadline per attempt, the documented
retry rules, and `attempts` counting the requests actually sent.

Each attempt runs under `asyncio.wait_for(model.timeout_s)`: a total deadline, whatever the
client's own timeouts mean (httpx's is per read, so a server trickling one byte a second
kept an SDK call alive for a minute). Retried: connection errors, timeouts, HTTP 408, 409,
429 and 5xx, up to `model.max_retries` times, after an exponential backoff (0.5 s doubling,
at most 8 s, up to a quarter shorter at random) or the server's `Retry-After` when it asks
for at most 60 s. Not retried: a final 4xx, a malformed reply, a bug.

With a shared endpoint limit (`model.max_connections`, backends/endpoint_limit.py) every
attempt first takes a slot of it, outside the attempt's deadline. The time spent waiting
for slots is the call's `queue_s`; `latency_s` leaves it out (it is our queueing, not the
model's latency), and `started_at` is when the first request actually went out.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from masgrid._private.actors.backends.base import BackendSettings, Completion
from masgrid._private.actors.backends.endpoint_limit import Gate, outcome_of, retry_after_s
from masgrid._private.actors.backends.errors import CallFailure, classify_exception

RETRY_STATUSES = frozenset({408, 409, 429})
FIRST_BACKOFF_S, MAX_BACKOFF_S, MAX_RETRY_AFTER_S = 0.5, 8.0, 60.0
_RETRIED = frozenset({"connection_refused", "unreachable", "connection_error", "timeout", "http_429", "http_5xx"})


class AttemptFailed(Exception):
    """One attempt's failure, with the server's Retry-After when it sent one."""

    def __init__(self, failure: CallFailure, retry_after: str | None = None) -> None:
        super().__init__(failure.error)
        self.failure = failure
        self.retry_after = retry_after


def backoff_s(retry: int, retry_after: str | None = None) -> float:
    """Seconds to wait before retry number `retry` (0-based)."""
    if retry_after:
        try:
            asked = float(retry_after)
        except ValueError:
            asked = -1.0  # an HTTP date: fall back to the backoff
        if 0 < asked <= MAX_RETRY_AFTER_S:
            return asked
    return min(FIRST_BACKOFF_S * 2**retry, MAX_BACKOFF_S) * (1 - 0.25 * random.random())


def retried(failure: CallFailure) -> bool:
    return failure.error_class in _RETRIED or failure.http_status in RETRY_STATUSES


async def with_retries(settings: BackendSettings, attempt: Callable[[int, float], Awaitable[Completion]],
                       failed: Callable[[CallFailure, float, int], Completion],
                       gate: Gate | None = None) -> Completion:
    """Run `attempt(attempts_so_far, start)` until it returns a Completion or the policy gives
    up; `attempt` raises AttemptFailed (or any client exception) for a failed try. With a
    `gate`, each attempt holds one of the endpoint's slots (see the module doc)."""
    start = time.perf_counter()
    failure = CallFailure(error_class="backend_error", message="no attempt was made")
    attempts = 0
    queued = 0.0
    sent_at: float | None = None
    for retry in range(settings.max_retries + 1):
        attempts += 1
        retry_after = None
        slot = None
        if gate is not None:
            slot = await gate.acquire()
            queued += slot.waited_s
        if sent_at is None:
            sent_at = time.time()
        answer: Completion | None = None
        try:
            async with asyncio.timeout(settings.timeout_s):  # no extra task per call, unlike wait_for
                answer = await attempt(attempts, start)
        except AttemptFailed as exc:
            failure, retry_after = exc.failure, exc.retry_after
        except TimeoutError:
            failure = CallFailure(error_class="timeout", message=f"no complete reply within model.timeout_s="
                                                                 f"{settings.timeout_s:g} s")
        except asyncio.CancelledError:
            if slot is not None and gate is not None:  # give the slot back, then stop
                gate.release(slot, "cancelled")
            raise
        except Exception as exc:  # noqa: BLE001 - every client's errors are classified, the run goes on
            failure = classify_exception(exc)
        if slot is not None and gate is not None:
            if answer is not None:
                gate.release(slot, outcome_of(answer.http_status, answer.error_class))
            else:
                gate.release(slot, outcome_of(failure.http_status, failure.error_class), retry_after_s(retry_after))
        if answer is not None:
            return _timed(answer, queued, sent_at)
        if not retried(failure):
            break
        if retry < settings.max_retries:
            await asyncio.sleep(backoff_s(retry, retry_after))
    return _timed(failed(failure, time.perf_counter() - start, attempts), queued, sent_at)


def _timed(completion: Completion, queued: float, sent_at: float | None) -> Completion:
    """The call's queueing apart from its latency (a backend's own object: updated in place)."""
    completion.queue_s = queued
    completion.latency_s = max(0.0, completion.latency_s - queued)
    completion.started_at = sent_at
    return completion
