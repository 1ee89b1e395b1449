"""A loopback chat endpoint that behaves like a provider's rate limit: each request takes
`latency_s`, and beyond `rate` requests in any one second it answers HTTP 429 with a
`Retry-After`. It records, per request, when it arrived, whether it was refused, and how
many requests were in flight, so a test or benchmark can check what a client did.

Used to inject 429s (tests/actors/backends/test_endpoint_limit.py) and to measure
rate-limit handling side by side (benchmarks/bench_endpoint_limit.py); the requests the
runs make are ordinary chat completions served by `ChatServer`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from collections.abc import Callable

from tests.support.chat_server import ChatServer, Reply


@dataclass
class Arrival:
    t: float  # time.time() on arrival
    refused: bool
    in_flight: int  # requests being answered when this one arrived, itself included


@dataclass
class ProviderLog:
    arrivals: list[Arrival] = field(default_factory=list)
    max_in_flight: int = 0

    @property
    def requests(self) -> int:
        return len(self.arrivals)

    @property
    def refused(self) -> int:
        return sum(a.refused for a in self.arrivals)


class RateLimitedProvider:
    """`ChatServer` behind a one-second sliding window of `rate` accepted requests."""

    def __init__(self, rate: int, latency_s: float, retry_after: str | None = "1",
                 answer: Callable[[dict], Reply] | None = None, models: tuple[str, ...] = ("test",)) -> None:
        self.rate, self.latency_s, self.retry_after = rate, latency_s, retry_after
        self.answer = answer or (lambda request: Reply("I have nothing to add."))
        self.accepted: deque[float] = deque()
        self.log = ProviderLog()
        self.in_flight = 0
        self.lock = threading.Lock()
        self.server = ChatServer(self._script, models=models)

    def _script(self, request: dict) -> Reply:
        now = time.time()
        with self.lock:
            while self.accepted and now - self.accepted[0] >= 1.0:
                self.accepted.popleft()
            refused = len(self.accepted) >= self.rate
            if not refused:
                self.accepted.append(now)
            self.in_flight += 1
            self.log.arrivals.append(Arrival(now, refused, self.in_flight))
            self.log.max_in_flight = max(self.log.max_in_flight, self.in_flight)
        try:
            if refused:
                headers = {"Retry-After": self.retry_after} if self.retry_after else None
                return Reply(status=429, headers=headers)
            time.sleep(self.latency_s)  # the answer takes this long (ThreadingHTTPServer: a thread each)
            return self.answer(request)
        finally:
            with self.lock:
                self.in_flight -= 1

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def __enter__(self) -> RateLimitedProvider:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)
