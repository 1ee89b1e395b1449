"""A real engine killed mid-sweep: the runs in flight end within seconds as interrupted (re-run
on resume), never recorded as the agents' model failures; the sweep starts no more runs
against the dead endpoint and ends with one line naming it; no engine process is left
behind; a resume after the engine is back completes every run."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pandas as pd
import pytest

from masgrid._private.platform.commands.cli import main
from tests.support.engine import engine_missing, start_engine

pytestmark = pytest.mark.slow

SEEDS = 6
LOST_CLASSES = {"connection_refused", "connection_error", "unreachable", "timeout", "backend_error", "http_5xx"}


def group_alive(pgid: int, wait_s: float = 15.0) -> bool:
    """Whether a process of the group is still there after `wait_s` (SIGKILLed workers take
    a moment to exit and be reaped)."""
    deadline = time.monotonic() + wait_s
    while True:
        out = subprocess.run(["ps", "-eo", "pgid="], capture_output=True, text=True).stdout.split()
        if str(pgid) not in out or time.monotonic() > deadline:
            return str(pgid) in out
        time.sleep(0.5)


def sweep_args(base_url: str, tiny_model, results) -> list[str]:
    """Six runs of 16 rounds, two at a time, against the engine; the calls retry as the
    presets do (max_retries 2), so a dead engine would otherwise cost every later call its retries."""
    return ["run", "-m", f"seed={','.join(map(str, range(SEEDS)))}", "task=sorting", "protocol=broadcast",
            "agents=3", "k=2", "max_rounds=16", "backend=openai", "model=local_vllm", "model.name=tiny",
            f"model.base_url={base_url}", f"model.tokenizer=hf:{tiny_model}/tokenizer.json", "model.max_tokens=16",
            "model.timeout_s=30", "model.http_client=direct", f"results_dir={results}", "sweep.max_concurrent=2",
            "sweep.progress=plain", "sweep.log_every_s=0"]


def recorded(results) -> pd.DataFrame:
    if not (results / "runs").is_dir() or not any((results / "runs").rglob("*.parquet")):
        return pd.DataFrame(columns=["run_id", "status", "error_class", "error", "model_error_classes"])
    return pd.read_parquet(results / "runs")


def test_engine_killed_mid_sweep_stops_it_in_seconds_and_resume_completes(tiny_model, tmp_path, ray_session, capsys):
    if engine_missing():
        pytest.skip(engine_missing())
    results = tmp_path / "r"
    engine = start_engine(tiny_model, tmp_path)
    port = int(engine.base_url.rsplit(":", 1)[1].split("/")[0])
    args = sweep_args(engine.base_url, tiny_model, results)
    codes: list[int] = []
    try:
        thread = threading.Thread(target=lambda: codes.append(main(args)))
        thread.start()
        deadline = time.monotonic() + 300
        while len(recorded(results)) < 1 and time.monotonic() < deadline:  # one run done, others in flight
            time.sleep(0.2)
        assert len(recorded(results)) >= 1, "no run finished before the deadline"
        os.killpg(engine.process.pid, 9)  # the engine dies mid-sweep, workers and all
        killed = time.monotonic()
        engine.process.wait(timeout=30)
        thread.join(timeout=300)
        took = time.monotonic() - killed
        assert not thread.is_alive()
    finally:
        engine.stop()
    with capsys.disabled():
        print(f"\nkill to the sweep's end: {took:.1f} s")
    assert not group_alive(engine.process.pid)  # no orphaned engine process
    err = capsys.readouterr().err
    assert codes == [2]
    line = err.strip().splitlines()[-1]
    assert line.startswith("masgrid run: the model endpoint stopped answering: " + engine.base_url), line
    assert "Connection refused" in line and "start the endpoint again and run the same command" in line
    assert took < 20, f"{took:.1f} s from the kill to the end of the sweep"  # measured: see the printed figure

    runs = recorded(results)
    interrupted = runs[runs["status"] == "failed"]
    assert len(interrupted) >= 1 and (interrupted["error_class"] == "interrupted").all()
    assert interrupted["error"].str.contains("stopped answering").all()
    finished = runs[runs["status"] != "failed"]
    assert set(finished["status"]) <= {"ok", "degraded"}  # nothing invalid: no model failures from the dead engine
    for classes in finished["model_error_classes"].dropna():
        assert not LOST_CLASSES & set(json.loads(classes)), classes
    assert len(runs) < SEEDS  # runs not started against the dead endpoint: absent, run on resume

    # resume while the engine is down: refused in one line, nothing started
    assert main(args) == 2
    assert "connection refused" in capsys.readouterr().err.strip().splitlines()[-1].lower()

    # the engine is back (same port): the resume runs the interrupted and the never-started runs
    engine = start_engine(tiny_model, tmp_path, port=port)
    try:
        assert main(args) == 0
    finally:
        engine.stop()
    out = capsys.readouterr().out
    assert f"{len(finished)} already complete" in out and f"{len(interrupted)} of them interrupted" in out
    after = recorded(results)
    assert len(after) == SEEDS and set(after["status"]) == {"ok"}, after[["status", "error"]]
