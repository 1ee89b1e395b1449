"""A driver that dies after its run's row is written: the sweep keeps the recorded run instead
of running it again (a worker node lost while its drivers shut down re-ran completed runs in
the multi-node test). Real Ray actors and a real recorder; the drivers are masgrid's own
`RunDriver`, made to die at a chosen moment with `os._exit`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.driver import RunDriver
from masgrid._private.platform.sweeps import sweep_execution
from masgrid._private.platform.sweeps.ray_runs import run_many

pytestmark = pytest.mark.slow


class DiesAfterRecording(RunDriver):
    async def run(self) -> Any:
        await super().run()  # the runs row is written
        os._exit(1)


class DiesAtOnce(RunDriver):
    async def run(self) -> Any:
        os._exit(1)


def config(results: Path) -> RunConfig:
    return RunConfig(protocol="kv", agents=2, k=2, seed=5, results_dir=str(results),
                     execution={"reuse_actors": False, "actor_start_timeout_s": 300})


def drivers(monkeypatch, ray: Any, by_attempt: dict[int, type]) -> list[int]:
    """Replace the sweep's driver factory: attempt n gets by_attempt[n]; the attempts made are returned."""
    made: list[int] = []

    def driver_actor(cfg: RunConfig, recorder: Any, attempt: int = 1) -> Any:
        made.append(attempt)
        cls = by_attempt.get(attempt, RunDriver)
        return ray.remote(num_cpus=0)(cls).options(namespace="masgrid", max_concurrency=16).remote(
            cfg, recorder, True, None)

    monkeypatch.setattr(sweep_execution, "driver_actor", driver_actor)
    return made


def test_a_run_recorded_before_its_driver_died_is_kept_not_run_again(tmp_path, ray_session, monkeypatch, caplog):
    made = drivers(monkeypatch, ray_session, {1: DiesAfterRecording})
    (summary,) = run_many([config(tmp_path)], max_concurrent=1)
    assert made == [1]
    assert summary.status == "ok" and summary.attempts == 1 and summary.error is None
    runs = pd.read_parquet(tmp_path / "runs")
    assert len(runs) == 1 and runs["status"].tolist() == ["ok"]
    assert summary.rounds == runs["rounds"].iloc[0] and summary.model_calls == runs["model_calls"].iloc[0]
    assert "died after the run was recorded" in caplog.text


def test_a_row_an_earlier_sweep_wrote_does_not_stand_for_an_attempt_that_died(tmp_path, ray_session, monkeypatch):
    """The runs row left by an earlier execution of the same run (here an ok one) is no proof
    that this attempt ended: the attempt died before writing anything, so the run runs again."""
    (first,) = run_many([config(tmp_path)], max_concurrent=1)
    before = pd.read_parquet(tmp_path / "runs")["started_at"].iloc[0]
    made = drivers(monkeypatch, ray_session, {1: DiesAtOnce})
    (summary,) = run_many([config(tmp_path)], max_concurrent=1)
    assert first.status == "ok" and made == [1, 2]
    assert summary.status == "ok" and summary.attempts == 2
    runs = pd.read_parquet(tmp_path / "runs")
    assert len(runs) == 1 and runs["started_at"].iloc[0] > before
