"""Issue 12, case 5: one writer per results directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.results import results_lock
from masgrid._private.platform.results.results_lock import LOCK_NAME, ResultsDirBusy, ResultsLock

ROOT = Path(__file__).resolve().parents[3]


def test_a_second_holder_is_refused_naming_the_first(tmp_path):
    first = ResultsLock(tmp_path)
    first.acquire()
    try:
        holder = json.loads((tmp_path / LOCK_NAME).read_text())
        assert holder["pid"] == os.getpid()
        with pytest.raises(ResultsDirBusy, match=rf"pid {os.getpid()}") as err:
            ResultsLock(tmp_path).acquire()
        assert "\n" not in str(err.value) and "another masgrid process" in str(err.value)
    finally:
        first.release()
    assert not (tmp_path / LOCK_NAME).exists()
    ResultsLock(tmp_path).acquire()  # free again


def test_a_dead_holder_does_not_keep_the_lock(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"host": os.uname().nodename, "pid": int(dead.stdout),
                                                  "token": "x", "since": "earlier"}))
    lock = ResultsLock(tmp_path)
    lock.acquire()  # the pid is gone: taken over
    assert json.loads((tmp_path / LOCK_NAME).read_text())["token"] == lock.token
    lock.release()


def test_another_hosts_lock_expires_when_not_refreshed(tmp_path, monkeypatch):
    path = tmp_path / LOCK_NAME
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "x", "since": "earlier"}))
    with pytest.raises(ResultsDirBusy, match="host elsewhere"):
        ResultsLock(tmp_path).acquire()
    old = time.time() - results_lock.STALE_S - 5
    os.utime(path, (old, old))
    lock = ResultsLock(tmp_path)
    lock.acquire()
    lock.release()


def test_nested_holds_in_one_process_share_the_lock(tmp_path):
    ResultsLock.hold(tmp_path)
    ResultsLock.hold(tmp_path)
    ResultsLock.drop(tmp_path)
    assert (tmp_path / LOCK_NAME).exists()
    ResultsLock.drop(tmp_path)
    assert not (tmp_path / LOCK_NAME).exists()


@pytest.mark.slow
def test_two_sweeps_racing_on_one_results_dir_run_each_point_once(tmp_path, ray_session):
    address = ray_session.get_runtime_context().gcs_address
    env = dict(os.environ, RAY_ADDRESS=address, RAY_AUTH_MODE="disabled")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m", "agents=1,2,3", "k=1", "seed=0,1",
           f"results_dir={results}", "sweep.progress=plain", "execution.actor_start_timeout_s=300"]
    procs = [subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    refused = [err for (out, err), p in zip(outs, procs) if p.returncode != 0]
    assert codes == [0, 2], outs
    assert "is being written by another masgrid process" in refused[0] and "Traceback" not in refused[0]
    runs = pd.read_parquet(results / "runs")
    assert len(runs) == 6 and runs["run_id"].is_unique and set(runs["status"]) == {"ok"}
    events = pd.read_parquet(results / "events")
    assert not events.duplicated(["run_id", "seq"]).any()
