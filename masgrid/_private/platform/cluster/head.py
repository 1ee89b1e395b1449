"""A persistent local Ray head: find it, start it (`masgrid up`), stop it (`masgrid down`).

Starting Ray costs most of a small run's time (docs/performance-startup.md), so `masgrid run` joins
a local head that is already running instead of starting its own. The head is found the way
`ray start` records it: the file `ray_current_cluster` in Ray's temp directory (RAY_TMPDIR,
else TMPDIR, else /tmp, then `ray/`), whose address must also accept a TCP connection, so a
file left behind by a head that died is ignored (a fresh local Ray starts instead).

`masgrid up` runs `ray start --head --block` in a session of its own and notes its process
id next to that file (`masgrid-head.json`); `masgrid down` stops that process group only.
It never runs `ray stop`, which would stop every Ray process of the machine, other users'
sessions included.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel

from masgrid._private.platform.results.results_lock import pid_alive

#: `ray start --head` default port
DEFAULT_PORT = 6379
#: seconds `masgrid up` waits for the head to accept connections
UP_TIMEOUT_S = 90.0
#: seconds `masgrid down` waits for the head's session to exit after SIGTERM to its process group,
#: before SIGKILL to what is left. An idle head is gone in about 3 s; one that ran a sweep outlived
#: SIGTERM for more than 18 s (its GCS waits on exporting metrics), and its GCS keeps no state to lose.
DOWN_TIMEOUT_S = 5.0


class ClusterError(RuntimeError):
    """`masgrid up`/`down` could not do what was asked (the message is one line)."""


class HeadState(BaseModel):
    """What `masgrid up` notes about the head it started."""

    pid: int
    address: str
    log: str


def ray_temp_dir() -> Path:
    """Ray's temp directory, as Ray itself chooses it (ray._common.utils)."""
    base = os.environ.get("RAY_TMPDIR") or (os.environ.get("TMPDIR") if sys.platform.startswith("linux") else None)
    return Path(base or "/tmp") / "ray"


def _address_file() -> Path:
    return ray_temp_dir() / "ray_current_cluster"


def _state_file() -> Path:
    return ray_temp_dir() / "masgrid-head.json"


def _accepts(address: str, timeout_s: float) -> bool:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return False
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def running_head(timeout_s: float = 0.5) -> str | None:
    """The address (host:port) of the local head `ray start` last recorded, if it answers;
    None when there is none or the recorded one is gone. Costs a file read and a connect."""
    try:
        address = _address_file().read_text().strip()
    except OSError:
        return None
    return address if address and _accepts(address, timeout_s) else None


def resolve_address(explicit: str | None) -> tuple[str, bool]:
    """(address for ray.init, whether it joins an existing cluster). An explicit
    `execution.ray_address` wins, then RAY_ADDRESS, then a running local head; else
    'local', which starts a fresh Ray even when a stale `ray_current_cluster` is left."""
    chosen = explicit or os.environ.get("RAY_ADDRESS") or None
    if chosen:
        return chosen, chosen != "local"
    head = running_head()
    return (head, True) if head else ("local", False)


def _read_state() -> HeadState | None:
    try:
        return HeadState.model_validate_json(_state_file().read_text())
    except (OSError, ValueError):
        return None


def _ray_executable() -> list[str]:
    script = Path(sys.executable).with_name("ray")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def fixed_port_flags() -> list[str]:
    """Free ports for what `ray start` would otherwise bind at fixed defaults (client server
    10001, dashboard 8265, dashboard agent 52365): a second Ray on the machine (another
    user's, a test's) holding one makes the head's raylet fail to start."""
    return [f"--ray-client-server-port={free_port()}", f"--dashboard-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}"]


def up(port: int = DEFAULT_PORT, num_cpus: int | None = None) -> str:
    """Start a persistent local head (or report the running one); returns a one-line message."""
    head = running_head()
    if head is not None:
        return f"a local Ray head is already running at {head}; `masgrid run` joins it"
    if not 0 < port < 65536:
        raise ClusterError(f"--port must be in 1..65535, not {port}")
    root = ray_temp_dir()
    root.mkdir(parents=True, exist_ok=True)
    log = root / "masgrid-head.log"
    cmd = [*_ray_executable(), "start", "--head", "--block", f"--port={port}", "--include-dashboard=false",
           "--disable-usage-stats", *fixed_port_flags(), *([f"--num-cpus={num_cpus}"] if num_cpus is not None else [])]
    env = {**os.environ, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    deadline = time.monotonic() + UP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ClusterError(f"ray start exited with status {proc.returncode}: {_last_line(log)} (log: {log})")
        head = running_head(0.2)
        if head is not None and head.endswith(f":{port}"):
            _state_file().write_text(HeadState(pid=proc.pid, address=head, log=str(log)).model_dump_json())
            return f"Ray head running at {head} (pid {proc.pid}); `masgrid run` joins it, `masgrid down` stops it"
        time.sleep(0.2)
    _stop_group(proc.pid)
    raise ClusterError(f"the Ray head did not accept connections within {UP_TIMEOUT_S:.0f} s (log: {log})")


def down() -> str:
    """Stop the head `masgrid up` started; ClusterError when there is none to stop."""
    state = _read_state()
    if state is None or not pid_alive(state.pid):
        _state_file().unlink(missing_ok=True)
        head = running_head()
        if head is not None:
            raise ClusterError(f"the Ray head at {head} was not started by `masgrid up`; stop it with `ray stop`")
        raise ClusterError("no local Ray head started by `masgrid up` is running; nothing to stop")
    _stop_group(state.pid)
    try:
        if _address_file().read_text().strip() == state.address:
            _address_file().unlink()  # as `ray stop` does: no later command tries the dead address
    except OSError:
        pass
    _state_file().unlink(missing_ok=True)
    return f"stopped the Ray head at {state.address} (pid {state.pid})"


def _stop_group(pid: int) -> None:
    """Stop every process of the head's session (`masgrid up` starts the head as a session
    leader: its GCS, raylet and dashboard in its process group, the Ray workers and the
    engines they spawn each in a group of their own): SIGTERM the head's group at once, as
    `ray stop` signals every Ray process at once, then SIGKILL whatever of the session is
    left after DOWN_TIMEOUT_S. A head that had run a sweep outlived a SIGTERM for more than
    18 s, to the head process alone or to its group, so `down` took 16.6 s with the old 15 s
    timeout; now 6.6 s (docs/performance-startup.md)."""
    for sig, wait_s in ((signal.SIGTERM, DOWN_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        targets = [pid] if sig == signal.SIGTERM else _session_members(pid)
        for target in targets:
            try:
                if target == pid:
                    os.killpg(pid, sig)
                else:
                    os.kill(target, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)  # reap it when this process started it
            except ChildProcessError:
                pass
            if not _session_members(pid):
                return
            time.sleep(0.2)


def _session_members(sid: int) -> list[int]:
    """Live processes (zombies aside) of the session `sid` leads, read from /proc; without
    /proc (not Linux) the session leader's process group only."""
    if not os.path.isdir("/proc"):
        return [sid] if pid_alive(sid, os.killpg) else []
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # after the command: state, ppid, pgrp, session
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != b"Z":
            members.append(int(entry))
    return members


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no output"
    return lines[-1].strip() if lines else "no output"


def cluster_command(command: str, args: list[str]) -> int:
    """`masgrid up [--port N] [--num-cpus N]` / `masgrid down`."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"masgrid {command}")
    if command == "up":
        parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"head port (default {DEFAULT_PORT})")
        parser.add_argument("--num-cpus", type=int, default=None, help="CPUs the head offers (default: all)")
    ns = parser.parse_args(args)
    try:
        message = up(ns.port, ns.num_cpus) if command == "up" else down()
    except ClusterError as exc:
        print(f"masgrid {command}: {exc}", file=sys.stderr)
        return 1
    print(f"masgrid {command}: {message}")
    return 0

