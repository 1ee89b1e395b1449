"""The same runs on real Ray actors: results identical to in-process execution, for any
packing of agents into actors, and no actor left behind."""

import time

import pandas as pd
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local, run_many, run_one


def config(tmp_path, sub, **kw):
    base = dict(task="sorting", protocol="kv", agents=10, k=10, mode="random", condition="camoc", seed=3,
                results_dir=str(tmp_path / sub))
    base.update(kw)
    return RunConfig.from_mapping(base)


def comparable_events(path):
    ev = pd.read_parquet(path / "events").sort_values("seq")
    return ev[["phase", "round", "agent", "kind", "verb", "text", "reply", "tokens_in", "tokens_out",
               "tokens_comm"]].reset_index(drop=True)


def test_ray_matches_local_for_every_packing(tmp_path, ray_session):
    local = run_local(config(tmp_path, "local", execution={"executor": "local"}))
    assert local.success
    reference = comparable_events(tmp_path / "local")
    for per_actor in (1, 3, 25):
        s = run_one(config(tmp_path, f"ray{per_actor}", execution={"agents_per_actor": per_actor}))
        assert s.status == "ok" and s.success and s.rounds == local.rounds and s.metrics == local.metrics
        pd.testing.assert_frame_equal(comparable_events(tmp_path / f"ray{per_actor}"), reference)
    names = {a["name"] for a in ray_session.util.list_named_actors(all_namespaces=True)}
    assert not any(n.startswith(("run:", "env:", "agents:")) for n in names), names


def test_concurrent_runs_on_ray(tmp_path, ray_session):
    cfgs = [config(tmp_path, "grid", task=t, protocol=p, agents=n, k=5, seed=i)
            for i, (t, p, n) in enumerate([("sorting", "broadcast", 20), ("max", "p2p", 3), ("prefix_sum", "kv", 5),
                                            ("sorting", "p2p", 1), ("prefix_sum", "broadcast", 3), ("max", "kv", 20)])]
    summaries = run_many(cfgs, max_concurrent=3)
    assert [s.status for s in summaries] == ["ok"] * len(cfgs)
    assert all(s.success for s in summaries)
    runs = pd.read_parquet(tmp_path / "grid" / "runs")
    assert sorted(runs["run_id"]) == sorted(c.run_id for c in cfgs)
    agents = pd.read_parquet(tmp_path / "grid" / "agents")
    assert len(agents) == sum(c.agents for c in cfgs) and agents["correct"].all()


def test_pooled_hosts_are_reused_and_give_identical_results(tmp_path, ray_session):
    from masgrid._private.platform.sweeps.ray_runs import host_pool

    cfgs = [config(tmp_path, "pool", protocol=p, agents=4, k=3, seed=s, execution={"reuse_actors": True})
            for s in range(2) for p in ("broadcast", "kv")]
    # the session's pool may hold hosts of earlier tests' sweeps: count what these runs add
    before = ray_session.get(host_pool().stats.remote())["created"]
    summaries = run_many(cfgs, max_concurrent=1)
    assert all(s.status == "ok" and s.success for s in summaries)
    stats = ray_session.get(host_pool().stats.remote())
    # at most one env + one host for all four runs: the warm driver keeps its last run's hosts
    assert stats["created"] - before <= 2 and stats["AgentHost"] == stats["EnvironmentHost"] == 0
    fresh = run_local(config(tmp_path, "fresh", protocol="kv", agents=4, k=3, seed=1,
                             execution={"executor": "local"}))
    pooled = next(s for c, s in zip(cfgs, summaries) if c.protocol == "kv" and c.seed == 1)
    assert (fresh.rounds, fresh.metrics) == (pooled.rounds, pooled.metrics)
    pd.testing.assert_frame_equal(comparable_events(tmp_path / "fresh"),
                                  comparable_events_of(tmp_path / "pool", pooled.run_id))


def comparable_events_of(path, run_id):
    ev = pd.read_parquet(path / "events", filters=[("run_id", "==", run_id)]).sort_values("seq")
    return ev[["phase", "round", "agent", "kind", "verb", "text", "reply", "tokens_in", "tokens_out",
               "tokens_comm"]].reset_index(drop=True)


def test_a_long_lived_process_keeps_a_bounded_number_of_recorders(tmp_path, ray_session):
    """One recorder per results_dir while it is used, at most RECORDERS_KEPT idle ones after:
    a process writing to many directories (a notebook, this test session) does not keep an
    idle process per directory; a stopped directory's recorder is started again when needed."""
    from masgrid._private.platform.sweeps import ray_runs

    dirs = [f"many{i}" for i in range(ray_runs.RECORDERS_KEPT + 3)]
    for sub in dirs:
        assert run_one(config(tmp_path, sub, agents=2, k=2)).status == "ok"
    kept = {k.rsplit(":", 1)[-1] for k in ray_runs._RECORDER_KEYS}
    assert len(ray_runs._RECORDER_KEYS) <= ray_runs.RECORDERS_KEPT
    assert str((tmp_path / dirs[-1]).resolve()) in kept  # the most recent stays
    deadline = time.monotonic() + 15
    while True:  # ray.kill is asynchronous: a stopped recorder's name goes a moment later
        live = [a["name"] for a in ray_session.util.list_named_actors(all_namespaces=True)
                if a["name"].startswith("recorder:")]
        if len(live) <= ray_runs.RECORDERS_KEPT or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(live) <= ray_runs.RECORDERS_KEPT, live
    # the first directory's recorder was stopped; writing there again starts one and resumes nothing twice
    s = run_one(config(tmp_path, dirs[0], agents=2, k=2, seed=4))
    assert s.status == "ok"
    assert len(pd.read_parquet(tmp_path / dirs[0] / "runs")) == 2


def test_packed_drivers_give_the_same_runs_with_fewer_processes(tmp_path, ray_session):
    """`execution.runs_per_driver=3` with components in the driver: six runs in flight share
    two driver processes, and every run records what it records unpacked."""
    from masgrid._private.platform.sweeps import ray_runs

    cases = [dict(task=t, protocol=p, agents=n, k=4, seed=i) for i, (t, p, n) in enumerate(
        [("sorting", "kv", 4), ("max", "p2p", 3), ("prefix_sum", "broadcast", 5), ("sorting", "broadcast", 2),
         ("max", "kv", 6), ("prefix_sum", "p2p", 3)])]
    reference = run_many([config(tmp_path, "plain", **c, execution={"reuse_actors": True}) for c in cases],
                         max_concurrent=6)
    # the session's idle driver workers: none, so the packed sweep's workers are all new and all end up here
    idle = ray_runs._RECORDERS.setdefault(f"{ray_session.get_runtime_context().get_job_id()}:driver-workers", [])
    while idle:
        ray_session.kill(idle.pop(), no_restart=True)
    packed = run_many([config(tmp_path, "packed", **c, execution={"reuse_actors": True, "components": "driver",
                                                                  "runs_per_driver": 3}) for c in cases],
                      max_concurrent=6)
    assert len(idle) == 2  # 6 runs in flight, 3 per driver process
    assert [s.status for s in packed] == ["ok"] * len(cases)
    fields = ("success", "rounds", "metrics", "model_calls")
    assert [[getattr(s, f) for f in fields] for s in packed] == [[getattr(s, f) for f in fields] for s in reference]
    for sub in ("plain", "packed"):
        assert len(pd.read_parquet(tmp_path / sub / "runs")) == len(cases)


def test_packing_needs_the_components_in_the_driver():
    import pytest

    from masgrid._private.platform.run.config import ConfigError

    with pytest.raises(ConfigError, match="runs_per_driver=2 needs execution.components=driver"):
        RunConfig.from_mapping({"execution": {"runs_per_driver": 2, "components": "actors"}})


def test_a_process_done_with_sweeping_hands_its_warm_actors_back(tmp_path, ray_session):
    """release_session_actors stops the idle drivers, the host pool with its hosts and the idle
    recorders a sweep left (the suite calls it after every file); the next sweep starts anew."""
    from masgrid._private.platform.sweeps import ray_runs

    def live(prefix: str) -> list[str]:
        return [a["name"] for a in ray_session.util.list_named_actors(all_namespaces=True)
                if a["name"].startswith(prefix)]

    cfgs = [config(tmp_path, "warm", agents=2, k=2, seed=s, execution={"reuse_actors": True}) for s in range(2)]
    assert all(s.status == "ok" for s in run_many(cfgs, max_concurrent=2))
    job = ray_session.get_runtime_context().get_job_id()
    assert ray_runs._RECORDERS[f"{job}:driver-workers"] and live("host-pool") and live("pool:")
    assert ray_runs.release_session_actors() >= 3  # the pool, a recorder, at least one idle driver
    deadline = time.monotonic() + 15
    while (live("host-pool") or live("pool:") or live("recorder:")) and time.monotonic() < deadline:
        time.sleep(0.2)  # ray.kill is asynchronous; the hosts go with the pool that made them
    assert not live("host-pool") and not live("pool:") and not live("recorder:")
    assert ray_runs.release_session_actors() == 0
    again = run_many([config(tmp_path, "warm", agents=2, k=2, seed=2, execution={"reuse_actors": True})])
    assert again[0].status == "ok" and len(pd.read_parquet(tmp_path / "warm" / "runs")) == 3
