"""`masgrid down`'s stop of a head's session (platform/cluster/head.py), on real processes: a
session leader and a child in a process group of its own (as Ray workers and engines are),
both ignoring SIGTERM, as a head that ran a sweep does."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from masgrid._private.platform.cluster import head

#: a leader that ignores SIGTERM and starts a child, in a group of its own, that ignores it too
#: (the child prints its pid once it is set up)
LEADER = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import os, signal, time; os.setpgid(0, 0); "
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(os.getpid(), flush=True); time.sleep(600)"])
time.sleep(600)
"""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not), read independently of head.py: /proc/PID/status."""
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next(line for line in f if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "zombie" not in state


def test_down_stops_the_whole_session_that_ignores_sigterm_within_its_timeout():
    leader = subprocess.Popen([sys.executable, "-c", LEADER], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        child = int(leader.stdout.readline())
        assert os.getpgid(child) == child != leader.pid and os.getsid(child) == leader.pid
        assert sorted(head._session_members(leader.pid)) == sorted([leader.pid, child])
        started = time.monotonic()
        head._stop_group(leader.pid)
        took = time.monotonic() - started
        assert not alive(leader.pid) and not alive(child)
        assert head._session_members(leader.pid) == []
        assert head.DOWN_TIMEOUT_S <= took < head.DOWN_TIMEOUT_S + 5
    finally:
        for pid in head._session_members(leader.pid):
            os.kill(pid, 9)
        leader.wait(10)


def test_a_session_that_exits_on_sigterm_is_not_waited_for():
    leader = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    started = time.monotonic()
    head._stop_group(leader.pid)
    assert time.monotonic() - started < 2
    assert not alive(leader.pid)
    leader.wait(5)
