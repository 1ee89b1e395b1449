"""A killed command's runs on warm (detached) drivers: cancelled, and never written.

On a cluster a command joined, runs and sweeps execute on detached driver workers that
outlive the command (platform/sweeps/warm.py). Two guards keep a killed command's runs from
spending model calls nobody collects and from racing the re-run a resume starts: the warm
driver cancels the runs of a job that has ended, and the warm recorder refuses writes
signed by any job but the one that last claimed the results_dir.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.results.recorder import OrphanedRun, Recorder
from tests.support.chat_server import ChatServer, Reply
from tests.support.kill import kill_when

ROOT = Path(__file__).resolve().parents[3]


def test_recorder_refuses_writes_of_a_job_that_no_longer_owns_the_results_dir(tmp_path):
    rec = Recorder(tmp_path)
    part = {"task": "t", "protocol": "p"}
    rec.write_as("job-a", "begin_run", "r1", part)  # nobody claimed yet: accepted
    rec.claim("job-a")
    rec.write_as("job-a", "write_events", "r1", part, 0, [])
    rec.claim("job-b")  # a new command took the writer lock
    for method, args in [("begin_run", ("r1", part)), ("write_events", ("r1", part, 1, [])),
                         ("finish_run", ({"run_id": "r1"}, [], part))]:
        with pytest.raises(OrphanedRun, match="submitted by job job-a, which is gone"):
            rec.write_as("job-a", method, *args)
    rec.write_as("job-b", "begin_run", "r1", part)
    with pytest.raises(ValueError, match="not a write"):
        rec.write_as("job-b", "run_status")
    assert not list((tmp_path / "runs").rglob("*.parquet"))


class SlowModel:
    """Answers every call after `delay_s`, counting requests (thread-safe)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            self.count += 1
        time.sleep(self.delay_s)
        return Reply(text="[1, 2]")


def command(base_url: str, results: Path) -> list[str]:
    return [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "backend=openai", "model=local_vllm",
            "model.name=test", f"model.base_url={base_url}", "model.max_retries=0", "preflight=false",
            "agents=2", "k=2", f"results_dir={results}", "execution.actor_start_timeout_s=300"]


@pytest.mark.slow
def test_a_killed_commands_warm_run_is_cancelled_and_its_rerun_records_once(tmp_path, ray_session):
    env = dict(os.environ, RAY_ADDRESS=ray_session.get_runtime_context().gcs_address, RAY_AUTH_MODE="disabled")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    results = tmp_path / "results"
    model = SlowModel(delay_s=0.4)
    with ChatServer(model) as server:
        log = (tmp_path / "first.log").open("w")
        proc = subprocess.Popen(command(server.base_url, results), env=env, cwd=tmp_path, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:  # once the run is under way on the warm driver
            kill_when(proc, lambda: model.count >= 4, tmp_path / "first.log", 240, "the run never called the model")
        finally:
            log.close()
        # the warm driver notices the dead job within its check interval and cancels the run
        time.sleep(3)
        settled = model.count
        time.sleep(3)
        assert model.count == settled, "the killed command's run kept calling the model"
        assert not list((results / "runs").rglob("*.parquet")), "a cancelled run must leave no runs row"

        model.delay_s = 0.0
        again = subprocess.run(command(server.base_url, results), env=env, cwd=tmp_path, capture_output=True,
                               text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    runs = pd.read_parquet(results / "runs")
    assert len(runs) == 1 and runs["status"].tolist() == ["ok"], runs[["status", "error"]]
    events = pd.read_parquet(results / "events")
    assert not events.duplicated(["run_id", "seq"]).any()
    # every model call the re-run recorded is its own: none of the cancelled attempt's events survive
    assert (events["kind"] == "model_call").sum() == runs["model_calls"].iloc[0]
