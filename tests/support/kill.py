"""SIGKILL a command subprocess at a chosen moment of its work (kill -9 tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from collections.abc import Callable


def kill_when(proc: subprocess.Popen, ready: Callable[[], bool], log: Path, timeout_s: float, stalled: str) -> None:
    """Poll `ready()` and SIGKILL `proc` as soon as it holds; fail with the command's log if
    it exits first, or with `stalled` after `timeout_s`. Then its process group goes too."""
    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, stalled
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        try:  # anything the killed command started in its own session
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
