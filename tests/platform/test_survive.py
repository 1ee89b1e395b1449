"""No single point of failure: masgrid's own actors are SIGKILLed mid-sweep (by process id)
and the sweep goes on; a results_dir that stops accepting writes (a tmpfs remounted
read-only, or filled up) stops the sweep with one line, and a resume completes the grid.

Each sweep runs `run_sweep` (the code of `masgrid run -m` after composition) in a thread of
the test process on the session's Ray, so the test can find the actors and kill them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.results.recorder import ResultsUnwritable
from masgrid._private.platform.sweeps.sweep import SweepResult, SweepSettings, run_sweep

pytestmark = pytest.mark.slow
NAMESPACE = "masgrid"


def _grid(results_dir: Path, seeds: int, reuse: bool = True, agents: int = 2) -> list[RunConfig]:
    return [RunConfig(protocol=p, agents=agents, k=2, seed=s, results_dir=str(results_dir),
                      execution={"reuse_actors": reuse, "actor_start_timeout_s": 300})
            for p in ("broadcast", "kv") for s in range(seeds)]


class _Sweep(threading.Thread):
    """run_sweep in the background; `outcome` is its SweepResult or the exception it raised."""

    def __init__(self, cfgs: list[RunConfig], reuse: bool = True, on_done: Callable | None = None) -> None:
        super().__init__(daemon=True)
        self.cfgs = cfgs
        self.settings = SweepSettings(max_concurrent=2, progress="off", reuse_actors=reuse)
        self.outcome: SweepResult | BaseException | None = None

    def run(self) -> None:
        try:
            self.outcome = run_sweep(self.cfgs, self.settings)
        except BaseException as exc:
            self.outcome = exc


def _runs_files(results_dir: Path) -> list[Path]:
    return list((results_dir / "runs").rglob("part-*.parquet")) if (results_dir / "runs").is_dir() else []


def _wait_for(predicate: Callable[[], Any], what: str, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _pid(ray: Any, actor: Any) -> int:
    return ray.get(actor.__ray_call__.remote(lambda self: os.getpid()), timeout=60)


def _check_dataset(results_dir: Path, cfgs: list[RunConfig]) -> pd.DataFrame:
    """Exactly one ok row per grid point; events and agents of those runs only, none twice."""
    runs = pd.read_parquet(results_dir / "runs")
    assert sorted(runs["run_id"]) == sorted(c.run_id for c in cfgs)
    assert set(runs["status"]) == {"ok"}, runs[["run_id", "status", "error"]]
    events = pd.read_parquet(results_dir / "events")
    assert not events.duplicated(["run_id", "seq"]).any()
    assert set(events["run_id"]) == set(runs["run_id"])
    agents = pd.read_parquet(results_dir / "agents")
    assert len(agents) == runs["agents"].sum() and not agents.duplicated(["run_id", "agent"]).any()
    return runs


def _kill_mid_sweep(tmp_path: Path, ray: Any, find: Callable[[], Any]) -> None:
    """SIGKILL the actor `find` returns once two runs are recorded; the sweep must finish every
    run ok, from a new process of that actor, with runs completing after the kill."""
    cfgs = _grid(tmp_path, seeds=6)
    sweep = _Sweep(cfgs)
    sweep.start()
    _wait_for(lambda: len(_runs_files(tmp_path)) >= 2, "the first runs")
    actor = find()
    old = _pid(ray, actor)
    os.kill(old, signal.SIGKILL)
    killed_at = time.time()
    sweep.join(600)
    assert isinstance(sweep.outcome, SweepResult), sweep.outcome
    assert (sweep.outcome.ran, sweep.outcome.ok, sweep.outcome.failed) == (len(cfgs), len(cfgs), 0)
    assert _pid(ray, actor) != old  # restarted, not the same process
    runs = _check_dataset(tmp_path, cfgs)
    assert (runs["finished_at"].map(lambda t: t.timestamp()) > killed_at).any(), "the kill landed after the sweep"


def test_sweep_survives_its_recorder_being_killed(tmp_path, ray_session):
    from masgrid._private.platform.sweeps.ray_runs import recorder_actor

    # the sweep's own handle (same job, same results_dir)
    _kill_mid_sweep(tmp_path, ray_session, lambda: recorder_actor(str(tmp_path)))


def test_sweep_survives_its_host_pool_being_killed(tmp_path, ray_session):
    # every host the pool created dies with it: in flight, or kept by warm drivers
    _kill_mid_sweep(tmp_path, ray_session, lambda: ray_session.get_actor("host-pool", namespace=NAMESPACE))


def test_a_run_whose_driver_is_killed_runs_again(tmp_path, ray_session):
    ray = ray_session
    cfgs = _grid(tmp_path, seeds=2, reuse=False, agents=4)  # each run has its own driver `run:<run_id>`
    from masgrid._private.platform.sweeps import ray_runs

    summaries: dict[str, Any] = {}
    original = ray_runs.run_many

    def run_many(todo: list[RunConfig], max_concurrent: int, on_done: Callable, **rest: Any) -> list[Any]:
        def keep(cfg: RunConfig, summary: Any) -> None:
            summaries[cfg.run_id] = summary
            on_done(cfg, summary)
        return original(todo, max_concurrent=max_concurrent, on_done=keep, **rest)

    ray_runs.run_many = run_many  # only to see each run's attempts; the run path is unchanged
    try:
        sweep = _Sweep(cfgs, reuse=False)
        sweep.start()
        victim = cfgs[-1].run_id
        driver = _wait_for(lambda: _actor(ray, f"run:{victim}"), "the victim's driver")
        os.kill(_pid(ray, driver), signal.SIGKILL)
        sweep.join(600)
    finally:
        ray_runs.run_many = original
    assert isinstance(sweep.outcome, SweepResult), sweep.outcome
    assert sweep.outcome.ok == len(cfgs)
    assert summaries[victim].attempts == 2 and summaries[victim].status == "ok"
    _check_dataset(tmp_path, cfgs)


def _actor(ray: Any, name: str) -> Any:
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None


@pytest.fixture
def tmpfs(tmp_path):
    """A 64 MiB tmpfs the test may remount read-only or fill (tests run as root)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)],
                                                       capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("breakage", ["read-only", "full"])
def test_a_results_dir_refusing_writes_stops_the_sweep_in_one_line_and_a_resume_completes(tmpfs, breakage,
                                                                                           ray_session):
    results = tmpfs / "results"
    cfgs = _grid(results, seeds=6)
    sweep = _Sweep(cfgs)
    sweep.start()
    _wait_for(lambda: len(_runs_files(results)) >= 2, "the first runs")
    filler = tmpfs / "filler"
    if breakage == "read-only":
        subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    else:  # fill every free block: the next write gets ENOSPC
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)
    sweep.join(600)
    exc = sweep.outcome
    assert isinstance(exc, ResultsUnwritable), exc
    line = str(exc)
    assert "\n" not in line and "Traceback" not in line
    assert ("Read-only file system" if breakage == "read-only" else "No space left on device") in line
    assert "run the same command again" in line and str(results) in line

    # the disk is back: the same sweep completes the grid, one row per point
    if breakage == "read-only":
        subprocess.run(["mount", "-o", "remount,rw", str(tmpfs)], check=True)
    else:
        filler.unlink()
    again = _Sweep(cfgs)
    again.start()
    again.join(600)
    assert isinstance(again.outcome, SweepResult), again.outcome
    assert again.outcome.skipped_ok + again.outcome.ok == len(cfgs) and again.outcome.failed == 0
    _check_dataset(results, cfgs)
