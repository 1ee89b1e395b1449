"""Read an engine's load while long requests are in flight (admission's readers under test)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def readings_while_busy(read: Callable[[], Any], send: Callable[[], Any], requests: int, tries: int,
                        enough: Callable[[Any], bool]) -> list[Any]:
    """Sends `requests` calls at once, each on a thread, and reads the load every 0.1 s (at most
    `tries` times) until a reading is `enough`; returns the readings once every call is back."""
    threads = [threading.Thread(target=send) for _ in range(requests)]
    for t in threads:
        t.start()
    readings: list[Any] = []
    for _ in range(tries):
        readings.append(read())
        if enough(readings[-1]):
            break
        threading.Event().wait(0.1)
    for t in threads:
        t.join()
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
