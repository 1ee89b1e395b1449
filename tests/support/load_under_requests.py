"""Read an engine's load while long requests are in flight (admission's readers under test)."""

from __future__ import annotations

import contextlib
import http.client
import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any


def readings_until(read: Callable[[], Any], enough: Callable[[Any], bool], tries: int = 50) -> list[Any]:
    """Readings every 0.1 s, up to `tries`, until one is `enough` (the last one then)."""
    readings = [read()]
    while not enough(readings[-1]) and len(readings) < tries:
        time.sleep(0.1)
        readings.append(read())
    return readings


def settles_to(read: Callable[[], Any], expected: Any, within_s: float = 10.0) -> Any:
    """The last reading, taken every 0.2 s until it equals `expected` or `within_s` passed: a
    replica still counts a call for a moment after its client has the answer."""
    deadline = time.monotonic() + within_s
    reading = read()
    while reading != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        reading = read()
    return reading


@contextlib.contextmanager
def streams_in_flight(base_url: str, model: str, count: int, max_tokens: int) -> Iterator[None]:
    """`count` streamed chat calls that have each sent their first token when the block starts,
    each running in the engine until it has written `max_tokens` (with `ignore_eos`) or the block
    ends; closed (and so aborted by the server) at its end. All calls are sent before the first
    answer is awaited, so they start together and share the engine: sent one after another, the
    first could be over before the last had its first token (a fresh clone's run read one call
    running, once). The tiny model writes thousands of tokens in a second or two, so a reader
    that may be held back that long must check that the calls were still unfinished when it
    read (test_admission.py does, with the engine's token counter)."""
    parts = urllib.parse.urlsplit(base_url)
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "count " * 50}], "stream": True,
                       "max_tokens": max_tokens, "ignore_eos": True})
    connections = []
    try:
        for _ in range(count):
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
            connections.append(conn)
            conn.request("POST", f"{parts.path}/chat/completions", body, {"content-type": "application/json"})
        for conn in connections:
            response = conn.getresponse()
            assert response.status == 200, (response.status, response.read()[:300])
            while not (line := response.readline()).startswith(b"data:"):
                assert line, "the stream ended before its first token"
        yield
    finally:
        for conn in connections:
            conn.close()
