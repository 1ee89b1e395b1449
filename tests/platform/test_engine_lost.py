"""A real engine killed mid-run: the runs in flight are interrupted (re-run on resume), never
recorded as the agents' model failures, and no engine process is left behind."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pandas as pd
import pytest

from masgrid.platform.config import RunConfig
from masgrid.platform.launch import run_many
from masgrid.platform.preflight import PreflightError, preflight
from tests.support.engine import engine_missing, start_engine

pytestmark = pytest.mark.slow


def group_alive(pgid: int) -> bool:
    out = subprocess.run(["ps", "-eo", "pgid="], capture_output=True, text=True).stdout.split()
    return str(pgid) in out


def test_engine_killed_mid_run_is_interrupted_not_a_model_failure(tiny_model, tmp_path, ray_session):
    if engine_missing():
        pytest.skip(engine_missing())
    engine = start_engine(tiny_model, tmp_path)
    try:
        cfg = RunConfig.from_mapping({
            "task": "sorting", "protocol": "broadcast", "agents": 3, "k": 2, "max_rounds": 16,
            "backend": "openai", "results_dir": str(tmp_path / "r"),
            "model": {"name": "tiny", "base_url": engine.base_url, "max_tokens": 16, "max_retries": 0,
                      "timeout_s": 30.0, "http_client": "direct"}})
        preflight([cfg])
        done: list = []
        thread = threading.Thread(target=lambda: done.append(run_many([cfg])))
        thread.start()
        deadline = time.monotonic() + 120
        while engine.counters()["request_success_total"] < 10 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(engine.process.pid, 9)  # the engine dies mid-run, workers and all
        engine.process.wait(timeout=30)
        thread.join(timeout=600)
        assert not thread.is_alive()
    finally:
        engine.stop()
    assert not group_alive(engine.process.pid)  # no orphaned engine process
    run = pd.read_parquet(tmp_path / "r" / "runs").iloc[0]
    assert run["status"] == "failed" and run["error_class"] == "interrupted", run["error"]
    assert "stopped answering" in run["error"]
    # resume: the same sweep refuses to start, in one line, while the engine is down
    with pytest.raises(PreflightError) as refused:
        preflight([cfg])
    assert "\n" not in str(refused.value) and "connection refused" in str(refused.value)
