"""End to end: a Hydra multirun on Ray, SIGKILLed midway, resumed, reported.

The sweep runs as a real subprocess (`python -m masgrid._private.platform.commands.cli run -m ...`) that joins
the test session's Ray instance through RAY_ADDRESS, as a job submitted to a long-lived
cluster does (and starting a Ray node per subprocess is slow on a loaded 2-core box). Its
agents call a loopback chat server that answers each call after a pause, so a run lasts
about a second and the kill lands midway. The test kills the sweep with SIGKILL once a few
runs are complete, then runs the same command again and checks that the completed runs were
kept untouched, the rest ran, and the dataset has exactly one ok row per grid point and no
duplicate events. Both placements: warm drivers on the joined cluster, which outlive the
killed command and must cancel its runs themselves (platform/sweeps/warm.py), and the command's
own actors (`execution.keep_warm=false`), which Ray ends with the command.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Callable

import pandas as pd
import pytest

from tests.support.chat_server import ChatServer, Reply
from tests.support.kill import kill_when

ROOT = Path(__file__).resolve().parents[3]
GRID = {"protocol": ("broadcast", "p2p", "kv"), "agents": (1, 2), "seed": (0,)}


def _command(results_dir: Path, base_url: str, warm: bool) -> list[str]:
    return [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m",
            *(f"{k}={','.join(map(str, v))}" for k, v in GRID.items()), "k=1", "max_rounds=3",
            "backend=openai", "model=local_vllm", "model.name=test", f"model.base_url={base_url}",
            "model.max_retries=0", "preflight=false", f"execution.keep_warm={str(warm).lower()}",
            f"results_dir={results_dir}", "sweep.max_concurrent=2", "sweep.log_every_s=0",
            "execution.actor_start_timeout_s=300"]


def _slow_model(body: dict) -> Reply:
    time.sleep(0.15)  # a run of 3 rounds lasts about a second: the kill lands among runs in flight
    return Reply(text="[1]")


def _env(address: str) -> dict[str, str]:
    env = dict(os.environ)
    env["RAY_ADDRESS"] = address
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("RAY_AUTH_MODE", "disabled")
    return env


def _complete(results_dir: Path) -> dict[Path, tuple[int, int]]:
    """runs files (one per completed run) -> (inode, mtime_ns)."""
    out = {}
    for path in (results_dir / "runs").rglob("part-*.parquet"):
        st = path.stat()
        out[path] = (st.st_ino, st.st_mtime_ns)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False], ids=["warm-drivers", "own-actors"])
def test_sweep_killed_midway_resumes_to_exactly_one_row_per_grid_point(tmp_path, ray_session, warm):
    with ChatServer(_slow_model) as server:
        _kill_resume_report(tmp_path, ray_session, lambda results: _command(results, server.base_url, warm))


def _kill_resume_report(tmp_path: Path, ray_session, command: Callable[[Path], list[str]]) -> None:
    address = ray_session.get_runtime_context().gcs_address
    results = tmp_path / "results"
    n_grid = len(list(itertools.product(*GRID.values())))
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(command(results), cwd=tmp_path, env=_env(address), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        kill_when(proc, lambda: len(_complete(results)) >= 2, tmp_path / "first.log", 300, "the sweep made no progress")
    finally:
        log.close()
    at_kill = set(_complete(results))
    # a run that was finishing as the command died may still land for a moment (Ray ends the
    # command's own actors, a warm driver cancels its runs: both within a second); then nothing may
    time.sleep(2)
    before = _complete(results)
    assert 2 <= len(before) < n_grid, "the kill should land midway through the grid"
    late = {p.stem.removeprefix("part-") for p in set(before) - at_kill}  # whole runs, kept as they are

    second = subprocess.run(command(results), cwd=tmp_path, env=_env(address), capture_output=True, text=True,
                            timeout=600, start_new_session=True)
    out = second.stdout + second.stderr
    assert second.returncode == 0, out
    assert "Connecting to existing Ray cluster" in out  # it joined the session's Ray
    assert f"{n_grid} runs in the grid; {len(before)} already complete" in out
    assert f"{n_grid - len(before)}/{n_grid - len(before)} done, 0 degraded, 0 invalid, 0 failed" in out  # progress line
    after = _complete(results)
    assert all(after[p] == sig for p, sig in before.items()), "completed runs must not be re-run"

    runs = pd.read_parquet(results / "runs")
    assert len(runs) == n_grid and runs["run_id"].is_unique
    assert set(runs["status"]) == {"ok"}
    points = set(zip(runs["protocol"].astype(str), runs["agents"], runs["seed"]))
    assert points == set(itertools.product(*GRID.values()))
    # the bound: at no instant were more than sweep.max_concurrent=2 runs executing
    edges = sorted([(t, 1) for t in runs["started_at"]] + [(t, -1) for t in runs["finished_at"]],
                   key=lambda e: (e[0], e[1]))
    in_flight = list(itertools.accumulate(d for _, d in edges))
    assert max(in_flight) <= 2
    events = pd.read_parquet(results / "events")
    assert not events.duplicated(["run_id", "seq"]).any()
    assert set(events["run_id"]) == set(runs["run_id"])  # no orphans of the interrupted runs
    agents = pd.read_parquet(results / "agents")
    assert len(agents) == runs["agents"].sum() and not agents.duplicated(["run_id", "agent"]).any()
    landed = runs[runs["run_id"].isin(late)]  # recorded after the kill: complete, with every event
    for _, row in landed.iterrows():
        assert (agents["run_id"] == row["run_id"]).sum() == row["agents"]
        assert ((events["run_id"] == row["run_id"]) & (events["kind"] == "model_call")).sum() == row["model_calls"]

    # a third invocation has nothing left to do and does not even connect to Ray
    third = subprocess.run(command(results), cwd=tmp_path, env=_env(address), capture_output=True, text=True, timeout=120)
    assert third.returncode == 0 and f"{n_grid} already complete" in third.stdout
    assert "Connecting to existing Ray cluster" not in third.stdout + third.stderr

    from masgrid._private.platform.commands.cli import main

    assert main(["report", str(results)]) == 0
    assert (results / "report" / "masbench" / "figure2.png").is_file() and (results / "report" / "masbench" / "table2.csv").is_file()
