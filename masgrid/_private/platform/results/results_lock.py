"""One writer per results directory.

Two sweeps writing one results_dir would run the same grid points twice and interleave
events of two attempts under one run id. The process that starts runs holds
`results_dir/.masgrid-writer.json` for as long as it runs them: created atomically
(O_EXCL), naming its host and pid, and refreshed every HEARTBEAT_S seconds. Another process
is refused with one line naming the holder. A holder that died does not keep the lock: on
the same host a pid that no longer exists frees it at once; from another host (a shared
filesystem) a lock not refreshed for STALE_S seconds is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from datetime import datetime, UTC
from pathlib import Path
from typing import Any
from collections.abc import Callable

LOCK_NAME = ".masgrid-writer.json"
HEARTBEAT_S = 10.0
STALE_S = 60.0


class ResultsDirBusy(RuntimeError):
    """Another live process is writing this results directory."""


def pid_alive(pid: int, signal_to: Callable[[int, int], None] = os.kill) -> bool:
    """Whether a process (or, with os.killpg, a process group) exists; someone else's counts."""
    try:
        signal_to(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ResultsLock:
    """Held by one process; re-entrant within it (nested run_many calls)."""

    _held: dict[str, ResultsLock] = {}
    #: tokens of locks this process released but could not delete (read-only results_dir)
    _released: set[str] = set()

    def __init__(self, results_dir: str | os.PathLike[str]) -> None:
        self.root = Path(results_dir).resolve()
        self.path = self.root / LOCK_NAME
        self.token = uuid.uuid4().hex
        self.depth = 0
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _record(self) -> dict[str, Any]:
        return {"host": socket.gethostname(), "pid": os.getpid(), "token": self.token,
                "since": datetime.now(UTC).isoformat(timespec="seconds")}

    def _holder(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None

    def _stale(self, holder: dict[str, Any] | None) -> bool:
        if holder is None:  # unreadable: being written this instant, or damaged; judge by age
            try:
                return time.time() - self.path.stat().st_mtime > STALE_S
            except FileNotFoundError:
                return True
        if holder.get("token") in ResultsLock._released:  # ours, released where it could not be deleted
            return True
        if holder.get("host") == socket.gethostname():
            return not pid_alive(int(holder.get("pid", -1)))
        try:
            return time.time() - self.path.stat().st_mtime > STALE_S
        except FileNotFoundError:
            return True

    def acquire(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if not self._stale(holder):
                    who = (f"host {holder.get('host')}, pid {holder.get('pid')}, since {holder.get('since')}"
                           if holder else "a process that is starting")
                    raise ResultsDirBusy(f"{self.root} is being written by another masgrid process ({who}); wait "
                                         f"for it to finish, or use another results_dir") from None
                stale = self.path.with_name(f"{LOCK_NAME}.stale-{uuid.uuid4().hex}")
                try:
                    os.replace(self.path, stale)  # one taker wins; the others retry and find the new lock
                    stale.unlink(missing_ok=True)
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(self._record(), fh)
            self._beat = threading.Thread(target=self._heartbeat, name="masgrid-results-lock", daemon=True)
            self._beat.start()
            return
        raise ResultsDirBusy(f"{self.root}: could not take the writer lock {self.path}")

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            holder = self._holder()
            if holder is None or holder.get("token") != self.token:
                return  # taken over (we were judged dead): stop touching it
            try:
                os.utime(self.path)
            except OSError:
                return

    def release(self) -> None:
        self._stop.set()
        holder = self._holder()
        if holder is not None and holder.get("token") == self.token:
            try:
                self.path.unlink(missing_ok=True)
            except OSError:  # a read-only results_dir: the file stays; this process no longer holds it
                ResultsLock._released.add(self.token)

    # -- re-entrant use -------------------------------------------------------------------
    @classmethod
    def hold(cls, results_dir: str | os.PathLike[str]) -> ResultsLock:
        key = str(Path(results_dir).resolve())
        lock = cls._held.get(key)
        if lock is None:
            lock = cls(results_dir)
            lock.acquire()
            cls._held[key] = lock
        lock.depth += 1
        return lock

    @classmethod
    def drop(cls, results_dir: str | os.PathLike[str]) -> None:
        key = str(Path(results_dir).resolve())
        lock = cls._held.get(key)
        if lock is None:
            return
        lock.depth -= 1
        if lock.depth <= 0:
            lock.release()
            del cls._held[key]
