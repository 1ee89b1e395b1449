"""Faults in the middle of runs: hung model calls, a killed agent host, a killed Serve replica.

Each case ends in one of the two allowed ways: the call times out and is retried (the run
completes with the scripted metrics), or the run is recorded failed with its cause; other
runs and results already written are untouched.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import ray

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import driver_actor, recorder_actor, run_many
from masgrid._private.platform.cluster.serve_apps import ensure_served
from tests.actors.serving.conftest import compose_run, metrics_of

pytestmark = pytest.mark.slow
COMMON = ["protocol=broadcast", "agents=3", "k=2", "mode=random", "seed=3"]


def served(tmp_path: Path, port: int, app: str, *extra: str) -> RunConfig:
    return compose_run(["backend=serve", "model=standin", f"model.serving.http_port={port}",
                        f"model.serving.app={app}", f"model.serving.route_prefix=/{app}", f"results_dir={tmp_path}",
                        *COMMON, *extra])


_RECORDERS: list[Any] = []  # a named non-detached actor lives while someone holds a handle


def start(cfg: RunConfig) -> tuple[Any, Any]:
    if cfg.backend == "serve":
        ensure_served(cfg.model)
    _RECORDERS.append(recorder_actor(cfg.results_dir))
    driver = driver_actor(cfg, _RECORDERS[-1])
    return driver, driver.run.remote()


def wait_for_round(driver: Any, at_least: int = 1, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while ray.get(driver.status.remote())["round"] < at_least:
        assert time.monotonic() < deadline, "run made no progress"
        time.sleep(0.1)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


@pytest.mark.parametrize("route", ["handle", "http"])
def test_hung_call_times_out_and_is_retried(tmp_path, serve_port: int, route: str) -> None:
    cfg = served(tmp_path, serve_port, f"hang-{route}", f"model.serving.route={route}", "model.timeout_s=3",
                 "model.max_retries=2", "model.serving.standin.hang_agents=[1]", "model.serving.standin.hang_call=2")
    scripted = compose_run(["backend=scripted", f"results_dir={tmp_path}", *COMMON])
    ensure_served(cfg.model)
    base, run = run_many([scripted, cfg], max_concurrent=2)
    assert run.status == "ok", run.error
    assert metrics_of(str(tmp_path), run.run_id) == metrics_of(str(tmp_path), base.run_id)
    events = pd.read_parquet(tmp_path / "events")
    calls = events[(events.run_id == run.run_id) & (events.kind == "model_call")]
    hung = calls[(calls.agent == 1) & (calls["round"] == 2)]
    assert hung.attempts.tolist() == [2] and hung.latency_s.iloc[0] >= 3
    assert (calls[calls.agent != 1].attempts == 1).all()
    # Each round's calls went out together (the hung one did not hold the others back), and
    # a call is recorded after it ended.
    spread = calls.groupby("round").call_started.agg(lambda s: (s.max() - s.min()).total_seconds())
    assert calls.call_started.notna().all() and (spread < 1.0).all(), spread
    ended = calls.call_started + pd.to_timedelta(calls.latency_s, unit="s")
    assert (ended <= calls.time).all() and events[events.kind != "model_call"].call_started.isna().all()


def test_failures_stay_inside_their_run(tmp_path, serve_port: int) -> None:
    """A killed agent host and a round that outlives every retry each fail their own run with
    the cause recorded; a concurrent run finishes and an earlier result is not touched."""
    earlier = compose_run(["backend=scripted", f"results_dir={tmp_path}", *COMMON, "seed=99"])
    driver, ref = start(earlier)
    done = ray.get(ref)
    ray.kill(driver, no_restart=True)
    before = snapshot(tmp_path)

    slow = ["model.serving.standin.per_token_latency_s=0.05"]
    victim = served(tmp_path, serve_port, "faults", *slow)
    hung = served(tmp_path, serve_port, "faults-hang", "model.timeout_s=60", "execution.round_timeout_s=4",
                  "model.serving.standin.hang_agents=[0]", "model.serving.standin.hang_attempts=1000", "seed=5")
    bystander = served(tmp_path, serve_port, "faults", *slow, "seed=4")
    runs = {name: start(cfg) for name, cfg in [("victim", victim), ("hung", hung), ("bystander", bystander)]}

    wait_for_round(runs["victim"][0])
    ray.kill(ray.get_actor(f"agents:{victim.run_id}:0", namespace="masgrid"), no_restart=True)
    summaries = {name: ray.get(ref) for name, (_, ref) in runs.items()}
    for driver, _ in runs.values():
        ray.kill(driver, no_restart=True)

    assert summaries["victim"].status == "failed" and "Actor" in summaries["victim"].error
    assert summaries["hung"].status == "failed" and "RoundTimeout" in summaries["hung"].error
    assert summaries["bystander"].status == "ok" and summaries["bystander"].success
    table = pd.read_parquet(tmp_path / "runs").set_index("run_id")
    assert table.loc[victim.run_id, "status"] == "failed" and "Actor" in table.loc[victim.run_id, "error"]
    assert "RoundTimeout" in table.loc[hung.run_id, "error"]
    assert table.loc[bystander.run_id, "status"] == "ok"
    assert table.loc[done.run_id, "status"] == "ok"
    after = snapshot(tmp_path)
    assert {k: after[k] for k in before} == before  # completed results untouched


def test_killed_serve_replica_is_survived_by_retries(tmp_path, serve_port: int) -> None:
    cfg = served(tmp_path, serve_port, "replica-kill", "model.serving.standin.per_token_latency_s=0.1",
                 "model.timeout_s=30", "model.max_retries=5")
    driver, ref = start(cfg)
    wait_for_round(driver)
    time.sleep(0.3)  # round 2's calls are now sleeping inside the replica
    replicas = [a for a in ray.util.list_named_actors(all_namespaces=True)
                if a["namespace"] == "serve" and a["name"].startswith("SERVE_REPLICA::replica-kill#")]
    assert len(replicas) == 1
    ray.kill(ray.get_actor(replicas[0]["name"], namespace="serve"), no_restart=True)
    summary = ray.get(ref)
    ray.kill(driver, no_restart=True)
    assert summary.status == "ok", summary.error
    (scripted,) = run_many([compose_run(["backend=scripted", f"results_dir={tmp_path}", *COMMON])])
    assert metrics_of(str(tmp_path), summary.run_id) == metrics_of(str(tmp_path), scripted.run_id)
    events = pd.read_parquet(tmp_path / "events")
    calls = events[(events.run_id == summary.run_id) & (events.kind == "model_call")]
    assert calls.attempts.max() >= 2  # the calls in flight on the killed replica were retried
