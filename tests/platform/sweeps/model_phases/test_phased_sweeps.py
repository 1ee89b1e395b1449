"""Sweeps in model phases on the session's Ray (2 CPUs), with stand-in models that reserve
1.5 CPUs each: two of them cannot be deployed together, as two 16-GPU models on a 16-GPU
cluster cannot. Serve's own status, sampled during the sweep, is the independent witness of
what was deployed when. (The real engine's phases: test_cluster_in_miniature.py.)"""

from __future__ import annotations

import json
import re
import threading
import time

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.model_phases import cluster_state
from masgrid._private.platform.sweeps.model_phases.plan import PhasePlanError
from masgrid._private.platform.sweeps.sweep import run_sweep, sweep_settings
from tests.support.ray_resources import wait_resources_free

#: what each stand-in reserves: more than half of what the session's Ray has free when this
#: module starts (1.5 of 2 CPUs on a quiet session), so one fits and two do not
FOOTPRINT = {"cpus": 1.5, "free": 2.0, "port": 0}


def standin(name: str, cpus: float | None = None) -> dict:
    return {"name": name, "served_name": name, "serving": {
        "kind": "standin", "app": f"ph-{name}", "route_prefix": f"/ph-{name}", "http_port": FOOTPRINT["port"],
        "standin": {"cpus": FOOTPRINT["cpus"] if cpus is None else cpus}}}


@pytest.fixture(scope="module", autouse=True)
def footprint(ray_session, serve_port):
    """Size the stand-ins by what the session's Ray has free now (earlier tests' Serve apps,
    e.g. engines another module left deployed, may hold some of its 2 CPUs)."""
    import ray

    free = round(ray.available_resources().get("CPU", 0.0), 2)
    if free < 0.5:
        pytest.skip(f"the session's Ray has only {free} CPU free for stand-in models")
    FOOTPRINT.update(cpus=round(free * 0.6, 2), free=free, port=serve_port)


def runs(model: dict, results: str, seeds=(0, 1), **extra: object) -> list[RunConfig]:
    return [RunConfig.from_mapping({"task": "sorting", "protocol": "kv", "agents": 2, "k": 2, "seed": s,
                                    "backend": "serve", "model": model, "results_dir": results, **extra})
            for s in seeds]


class Witness:
    """Samples serve.status() every 0.2 s: which of the apps ran at the same time."""

    def __init__(self, apps: set[str]) -> None:
        self.apps, self.seen, self.stop = apps, [], threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from ray import serve

        while not self.stop.is_set():
            try:
                self.seen.append({a for a in serve.status().applications if a in self.apps})
            except Exception:
                pass
            time.sleep(0.2)

    def __enter__(self) -> Witness:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def delete_apps(*apps: str) -> None:
    from ray import serve

    for app in apps:
        try:
            serve.delete(app)
        except Exception:
            pass
        cluster_state.forget_app(app)


@pytest.fixture
def clean(ray_session):
    """Starts from no managed app: earlier tests' single runs leave theirs registered (e.g. the
    default stand-in), and a phase would rightly release it, which the release lists check.
    The plan reads Ray's free resources, which lag a deleted app's: it waits for them, or a
    plan made at once sees the session's 2 CPUs still short (seen on a saturated machine)."""
    delete_apps(*cluster_state.managed_apps())
    wait_resources_free(keys=("CPU",))
    yield
    delete_apps("ph-a", "ph-b", "ph-c", "ph-broken")


def test_two_models_that_do_not_fit_together_run_in_two_phases_and_resume_loads_nothing(clean, tmp_path):
    a, b = standin("a"), standin("b")
    cfgs = runs(a, str(tmp_path)) + runs(b, str(tmp_path))
    settings = sweep_settings({"max_concurrent": 2, "progress": "off"})
    with Witness({"ph-a", "ph-b"}) as witness:
        result = run_sweep(cfgs, settings)
    assert result.ran == 4 and result.ok == 4, result
    assert {"ph-a"} in witness.seen and {"ph-b"} in witness.seen
    assert not any(s == {"ph-a", "ph-b"} for s in witness.seen)  # never both at once
    phases = pd.read_parquet(tmp_path / "phases")
    assert sorted(map(list, phases["loaded"])) == [["a"], ["b"]]  # each model loaded once
    assert list(phases.sort_values("phase")["released"].map(list)) == [[], ["a"]]
    assert (phases["runs"] == 2).all() and (phases["load_s"] > 0).all() and (phases["runs_held"] == 0).all()
    recorded = pd.read_parquet(tmp_path / "runs")
    assert sorted(recorded["run_id"]) == sorted(c.run_id for c in cfgs)
    assert set(recorded.groupby("model")["run_id"].count()) == {2}
    # the resume has nothing pending: no phase, nothing loaded (b stays up from the last phase)
    again = run_sweep(cfgs, settings)
    assert again.ran == 0 and again.skipped_ok == 4
    assert len(pd.read_parquet(tmp_path / "phases")) == 2
    # a resume of one missing run of a: only a's phase; b is released, a loaded again
    from masgrid._private.platform.results.recorder import Recorder

    assert Recorder(str(tmp_path)).run_outcomes()
    partial = tmp_path / "partial"
    third = run_sweep(runs(a, str(partial), seeds=(0,)) + runs(b, str(partial), seeds=()), settings)
    assert third.ran == 1
    rows = pd.read_parquet(partial / "phases")
    assert list(rows["loaded"].map(list)) == [["a"]] and list(rows["released"].map(list)) == [["b"]]


def test_a_team_that_needs_both_at_once_is_refused_before_anything_starts(clean, tmp_path):
    from ray import serve

    team = RunConfig.from_mapping({
        "task": "sorting", "protocol": "kv", "agents": 2, "k": 2, "backend": "serve", "results_dir": str(tmp_path),
        "model": standin("a"), "team": {"models": ["a", "b"], "presets": {
            m: {"preset": "standin", **standin(m), "backend": "serve"} for m in ("a", "b")}}})
    with pytest.raises(PhasePlanError) as err:
        run_sweep([team], sweep_settings({"progress": "off"}))
    assert "a team needs a, b deployed at once" in str(err.value) and f"CPU {FOOTPRINT['cpus']:g}" in str(err.value)
    # the cluster as the plan saw it: room for one member (the team was refused, not the model), within 2 CPUs
    total = re.search(r"CPU ([\d.]+) in all", str(err.value))
    assert total is not None and FOOTPRINT["cpus"] <= float(total[1]) <= 2.0, str(err.value)
    try:
        apps = set(serve.status().applications)
    except Exception:
        apps = set()
    assert not apps & {"ph-a", "ph-b"}
    assert not (tmp_path / "runs").exists()


def test_a_model_that_does_not_load_holds_its_runs_and_the_next_phase_goes_on(clean, tmp_path):
    broken = {"name": "broken", "served_name": "broken", "serving": {
        "kind": "vllm", "accelerator": "cpu", "app": "ph-broken", "route_prefix": "/ph-broken", "http_port": FOOTPRINT["port"],
        "model_path": str(tmp_path / "no-weights"), "cpus_per_worker": 0.5, "ingress_cpus": 0.1}}
    cfgs = runs(broken, str(tmp_path)) + runs(standin("a"), str(tmp_path))
    result = run_sweep(cfgs, sweep_settings({"progress": "off"}))
    assert result.held == 2 and result.ok == 2 and result.exit_code == 1
    held = [line for run_id, line in result.failures.items()]
    assert all(line.startswith("not run: model broken did not load") and "no model at" in line for line in held)
    recorded = pd.read_parquet(tmp_path / "runs")
    assert set(recorded["model"]) == {"a"}  # held runs have no row: a resume runs them
    phases = pd.read_parquet(tmp_path / "phases")
    failed = phases[phases["failed"].map(len) > 0].iloc[0]
    assert list(failed["failed"]) == ["broken"] and failed["runs_held"] == 2 and "no model at" in failed["error"]


def test_a_second_sweep_is_refused_while_another_live_sweep_swaps_models(clean, tmp_path, monkeypatch):
    from ray.experimental import internal_kv

    from masgrid._private.platform.sweeps.model_phases.cluster_state import PhasesBusy
    from masgrid._private.platform.sweeps.warm import job_alive

    key, ns = b"masgrid:model-phases:owner", "masgrid"
    internal_kv._internal_kv_put(key, json.dumps({"job": "7f000000", "since": time.time()}).encode(), namespace=ns)
    try:
        assert job_alive("7f000000")  # an id the GCS does not know counts as alive
        with pytest.raises(PhasesBusy, match="another sweep .Ray job 7f000000"):
            run_sweep(runs(standin("a"), str(tmp_path)), sweep_settings({"progress": "off"}))
        assert not (tmp_path / "runs").exists()
        # a holder whose job has ended is taken over
        monkeypatch.setattr("masgrid._private.platform.sweeps.warm.job_alive", lambda job: False)
        result = run_sweep(runs(standin("a"), str(tmp_path)), sweep_settings({"progress": "off"}))
        assert result.ok == 2
        assert internal_kv._internal_kv_get(key, namespace=ns) is None  # released at the end
    finally:
        internal_kv._internal_kv_del(key, namespace=ns)


def test_a_single_run_deploys_its_model_as_one_phase_and_refuses_a_team_that_cannot_fit(clean, tmp_path):
    """Outside a sweep (masgrid run, the API): the app a phased sweep left up is released for a
    model that needs its room (and kept for one that fits beside it), and a team that cannot be up at once is one preflight line."""
    from ray import serve

    from masgrid._private.platform.sweeps.ray_runs import run_many
    from masgrid._private.platform.sweeps.preflight import PreflightError, preflight

    first = run_sweep(runs(standin("a"), str(tmp_path / "s"), seeds=(0,)), sweep_settings({"progress": "off"}))
    assert first.ok == 1 and "ph-a" in serve.status().applications
    (cfg,) = runs(standin("b"), str(tmp_path / "one"), seeds=(0,))
    preflight([cfg])  # loads b, releasing a (the sweep's leftover)
    apps = set(serve.status().applications)
    assert "ph-b" in apps and "ph-a" not in apps
    (summary,) = run_many([cfg])
    assert summary.status == "ok"
    (small,) = runs(standin("c", cpus=0.05), str(tmp_path / "small"), seeds=(0,))
    preflight([small])  # fits beside b: b stays up
    assert {"ph-b", "ph-c"} <= set(serve.status().applications)
    team = RunConfig.from_mapping({
        "task": "sorting", "protocol": "kv", "agents": 2, "k": 2, "backend": "serve", "results_dir": str(tmp_path),
        "model": standin("a"), "team": {"models": ["a", "b"], "presets": {
            m: {"preset": "standin", **standin(m), "backend": "serve"} for m in ("a", "b")}}})
    with pytest.raises(PreflightError, match="a team needs a, b deployed at once"):
        preflight([team])


def test_an_engine_lost_mid_phase_is_planned_again_and_its_runs_finish(clean, tmp_path):
    """ph-a's app disappears while its runs are in flight (deleted behind the sweep's back, as
    a lost node would take it): those runs are interrupted, not failed, the sweep deploys the
    model again and every run is recorded once, ok."""
    from ray import serve

    a = standin("a")
    a["serving"]["standin"]["per_token_latency_s"] = 0.02  # runs long enough to be caught in flight
    # a call through the handle of a deleted app waits for its timeout before the run probes the
    # endpoint: 8 s (a call takes about 1 s here), not the 120 s default that made this test 137 s long
    a.update(timeout_s=8.0, max_retries=1)
    cfgs = runs(a, str(tmp_path), seeds=(0, 1, 2, 3))
    done = threading.Event()

    def pull_the_plug() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not done.is_set():
            if any((tmp_path / "runs").rglob("part-*.parquet")):
                serve.delete("ph-a")
                return
            time.sleep(0.1)

    saboteur = threading.Thread(target=pull_the_plug, daemon=True)
    saboteur.start()
    try:
        result = run_sweep(cfgs, sweep_settings({"max_concurrent": 2, "progress": "off"}))
    finally:
        done.set()
        saboteur.join()
    recorded = pd.read_parquet(tmp_path / "runs")
    assert result.ok == 4 and result.failed == 0, result
    assert sorted(recorded["run_id"]) == sorted(c.run_id for c in cfgs) and recorded["run_id"].is_unique
    phases = pd.read_parquet(tmp_path / "phases").sort_values("started_at")
    assert [list(r) for r in phases["loaded"]] == [["a"], ["a"]]  # deployed again after the loss
    assert phases.iloc[0]["error"].startswith("stopped: ")
