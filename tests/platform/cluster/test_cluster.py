"""Finding, starting and stopping a persistent local Ray head (platform/cluster/head.py).

The address rules are checked against real sockets; the end-to-end tests start real heads
(`ray start --head --block` and `masgrid up`) in a Ray temp directory of their own
(RAY_TMPDIR), so they neither join nor stop any other cluster on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.cluster import head as cluster

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_tmp(monkeypatch):
    """A private, short Ray temp directory (Ray's socket paths must stay short)."""
    root = Path(tempfile.mkdtemp(prefix="mgt-", dir="/tmp"))
    monkeypatch.setenv("RAY_TMPDIR", str(root))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (root / "ray").mkdir()
    yield root
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def write_address(root: Path, address: str) -> None:
    (root / "ray" / "ray_current_cluster").write_text(address + "\n")


# -- address rules ------------------------------------------------------------------------------------

def expected_address(explicit: str | None, env: str | None, recorded: str | None, listening: set[str]) -> tuple[str, bool]:
    """The rule as docs/performance-startup.md states it, written separately from the code."""
    if explicit:
        return explicit, explicit != "local"
    if env:
        return env, env != "local"
    if recorded is not None and recorded in listening:
        return recorded, True
    return "local", False


def test_address_rules_on_random_cases(ray_tmp, monkeypatch):
    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        alive = f"127.0.0.1:{live.getsockname()[1]}"
        dead = f"127.0.0.1:{free_port()}"
        rng = random.Random(7)
        for _ in range(60):
            explicit = rng.choice([None, "", "auto", "local", "10.0.0.5:6379", "ray://h:10001"])
            env = rng.choice([None, "", "local", "10.1.1.1:6380"])
            recorded = rng.choice([None, alive, dead, "garbage", ""])
            if env is None:
                monkeypatch.delenv("RAY_ADDRESS", raising=False)
            else:
                monkeypatch.setenv("RAY_ADDRESS", env)
            file = ray_tmp / "ray" / "ray_current_cluster"
            file.unlink(missing_ok=True)
            if recorded is not None:
                write_address(ray_tmp, recorded)
            assert cluster.resolve_address(explicit or None) == expected_address(
                explicit or None, env or None, recorded, {alive}), (explicit, env, recorded)


def test_running_head_reads_rays_temp_dir(ray_tmp, monkeypatch):
    assert cluster.ray_temp_dir() == ray_tmp / "ray"
    assert cluster.running_head() is None  # no file
    monkeypatch.delenv("RAY_TMPDIR")
    monkeypatch.setenv("TMPDIR", str(ray_tmp))
    assert cluster.ray_temp_dir() == ray_tmp / "ray"


# -- one-line errors ----------------------------------------------------------------------------------

def masgrid(env: dict[str, str], *args: str, timeout: float = 300, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def cli_env(root: Path) -> dict[str, str]:
    env = {**os.environ, "RAY_TMPDIR": str(root), "RAY_AUTH_MODE": "disabled",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("RAY_ADDRESS", None)
    return env


def test_down_with_nothing_running_is_one_clear_line(ray_tmp):
    out = masgrid(cli_env(ray_tmp), "down")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == "masgrid down: no local Ray head started by `masgrid up` is running; nothing to stop"


def test_down_refuses_a_head_it_did_not_start(ray_tmp):
    with socket.socket() as live:  # a live address recorded by someone else's `ray start`
        live.bind(("127.0.0.1", 0))
        live.listen()
        address = f"127.0.0.1:{live.getsockname()[1]}"
        write_address(ray_tmp, address)
        out = masgrid(cli_env(ray_tmp), "down")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f"masgrid down: the Ray head at {address} was not started by `masgrid up`; stop it with `ray stop`"]


def test_up_with_a_bad_port_is_one_clear_line(ray_tmp):
    out = masgrid(cli_env(ray_tmp), "up", "--port", "70000")
    assert out.returncode == 1 and out.stderr.strip() == "masgrid up: --port must be in 1..65535, not 70000"


# -- real heads -------------------------------------------------------------------------------------------

def processes_under(root: Path, wait_s: float = 30) -> list[str]:
    """Command lines of live processes started for this test's Ray temp directory (in their
    command line or environment: workers rename themselves `ray::...`), after up to wait_s."""
    deadline = time.monotonic() + wait_s
    while True:
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            proc = Path("/proc") / pid
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = (proc / "environ").read_bytes()
                state = (proc / "stat").read_text().split(") ")[-1][:1]
            except OSError:
                continue
            if state != "Z" and (str(root) in cmd or f"RAY_TMPDIR={root}".encode() in environ):
                out.append(cmd)
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.5)


def named_actors(env: dict[str, str], address: str) -> list[str]:
    code = ("import json, ray; ray.init(address=%r, namespace='masgrid', log_to_driver=False); "
            "print(json.dumps(sorted(a['name'] for a in ray.util.list_named_actors(all_namespaces=True))))" % address)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def warm_actor_ids(env: dict[str, str], address: str) -> dict[str, str]:
    """name -> actor id of every warm actor: the same id means the same process was reused."""
    code = ("import json, ray; ray.init(address=%r, namespace='masgrid', log_to_driver=False); "
            "names = [a['name'] for a in ray.util.list_named_actors(all_namespaces=True) if a['name'].startswith('warm-')]; "
            "print(json.dumps({n: ray.get_actor(n, namespace='masgrid')._actor_id.hex() for n in names}))" % address)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_stale_warm_actor(env: dict[str, str], address: str) -> None:
    code = ("import ray; ray.init(address=%r, namespace='masgrid', log_to_driver=False)\n"
            "@ray.remote(num_cpus=0)\nclass Old:\n    def ping(self): return 1\n"
            "a = Old.options(name='warm-driver@000000000000', lifetime='detached').remote(); ray.get(a.ping.remote())"
            % address)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def run_events(results: Path) -> pd.DataFrame:
    events = pd.read_parquet(results / "events")
    return events.sort_values("seq")[["seq", "phase", "round", "agent", "kind", "text", "reply"]].reset_index(drop=True)


def test_run_joins_a_ray_start_head_and_reuses_its_warm_actors(ray_tmp, tmp_path):
    """`ray start --head` by hand: `masgrid run` joins it, leaves warm actors, the next run
    uses them (same events), stale-version warm actors are retired, `masgrid down` refuses it."""
    env = cli_env(ray_tmp)
    port = free_port()
    # the head's environment names another masgrid first: its workers must not run it
    decoy = tmp_path / "decoy" / "masgrid"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the head environment masgrid, not this checkout')\n")
    head_env = {**env, "PYTHONPATH": os.pathsep.join([str(decoy.parent), env["PYTHONPATH"]])}
    head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                             f"--port={port}", "--include-dashboard=false", "--disable-usage-stats", "--num-cpus=2",
                             *cluster.fixed_port_flags()],
                            env=head_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while cluster.running_head() is None:
            assert head.poll() is None and time.monotonic() < deadline, "ray start --head did not come up"
            time.sleep(0.5)
        address = cluster.running_head()
        assert address is not None and address.endswith(f":{port}")

        # from another directory: Ray puts the command's working directory first on its workers' path
        first = masgrid(env, "run", "agents=3", "k=2", f"results_dir={tmp_path / 'a'}", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert f"Connecting to existing Ray cluster at address: {address}" in first.stderr
        names = named_actors(env, address)
        for role in ("warm-driver@", "warm-host-pool@", "warm-recorder-"):
            assert any(n.startswith(role) for n in names), names

        first_events = run_events(tmp_path / "a")
        make_stale_warm_actor(env, address)
        # the same run again: the warm driver, hosts and this results_dir's recorder serve it
        second = masgrid(env, "run", "agents=3", "k=2", f"results_dir={tmp_path / 'a'}", cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        after = named_actors(env, address)
        assert "warm-driver@000000000000" not in after  # an older code version's warm actor is retired
        assert sorted(n for n in after if n.startswith("warm-")) == sorted(n for n in names if n.startswith("warm-"))
        pd.testing.assert_frame_equal(run_events(tmp_path / "a"), first_events)
        assert len(pd.read_parquet(tmp_path / "a" / "runs")) == 1

        refused = masgrid(env, "down")
        assert refused.returncode == 1 and "was not started by `masgrid up`" in refused.stderr
    finally:
        # the whole group at once, as `ray stop` does; a graceful stop of the head process alone
        # took about 30 s (its GCS waits on exporting metrics to the agent already stopped)
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(5)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):  # all gone already
            os.killpg(head.pid, signal.SIGKILL)
        head.wait(10)
    assert processes_under(ray_tmp) == []


def test_up_and_down_are_idempotent_and_leave_nothing(ray_tmp, tmp_path):
    env = cli_env(ray_tmp)
    port = free_port()
    try:
        up = masgrid(env, "up", f"--port={port}", "--num-cpus=2")
        assert up.returncode == 0, up.stderr
        assert up.stdout.startswith("masgrid up: Ray head running at ") and f":{port} (pid " in up.stdout
        again = masgrid(env, "up", f"--port={port}")
        assert again.returncode == 0 and "already running" in again.stdout
        run = masgrid(env, "run", "agents=2", "k=2", f"results_dir={tmp_path / 'r'}")
        assert run.returncode == 0, run.stderr
        assert "Connecting to existing Ray cluster" in run.stderr
        # a sweep leaves a warm driver per slot; the next sweep runs on the very same processes
        address = cluster.running_head()
        sweep = masgrid(env, "run", "-m", "agents=2", "k=2", "seed=0,1", "sweep.max_concurrent=2",
                        "sweep.progress=off", f"results_dir={tmp_path / 'sw'}")
        assert sweep.returncode == 0, sweep.stderr
        warm = warm_actor_ids(env, address)
        assert {n.split("@")[0] for n in warm} >= {"warm-driver", "warm-driver-2", "warm-host-pool"}, warm
        again = masgrid(env, "run", "-m", "agents=2", "k=2", "seed=2,3", "sweep.max_concurrent=2",
                        "sweep.progress=off", f"results_dir={tmp_path / 'sw'}")
        assert again.returncode == 0, again.stderr
        assert warm_actor_ids(env, address) == warm
        runs = pd.read_parquet(tmp_path / "sw" / "runs")
        assert sorted(runs["seed"]) == [0, 1, 2, 3] and set(runs["status"]) == {"ok"}
    finally:
        down = masgrid(env, "down")
    assert down.returncode == 0 and down.stdout.startswith("masgrid down: stopped the Ray head at "), down.stderr
    assert processes_under(ray_tmp) == []  # head, workers and warm actors are gone
    assert not (ray_tmp / "ray" / "ray_current_cluster").exists()
    again = masgrid(env, "down")
    assert again.returncode == 1 and "nothing to stop" in again.stderr
    # with no head left, a run starts (and stops) its own Ray again
    run = masgrid(env, "run", "agents=2", "k=2", f"results_dir={tmp_path / 's'}")
    assert run.returncode == 0, run.stderr
    assert "Connecting to existing Ray cluster" not in run.stderr
    assert processes_under(ray_tmp) == []
