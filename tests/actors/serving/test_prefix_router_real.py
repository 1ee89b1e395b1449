"""Two replicas of the tiny model behind Serve LLM's PrefixCacheAffinityRouter, a short SIMAS
sweep through them by DeploymentHandle (backend=serve): both replicas serve calls, and the
tokens and cache hits the runs record are the engines' own.

Which replica served what is read outside masgrid (tests/support/serve_replicas.py): the
replicas' ids from the names Serve gives their actors, and each engine's request, token and
prefix-cache counters from the metrics Serve LLM exports through Ray, tagged with the replica
id. On 2 cores the two engines start side by side (about 2.5 minutes together), the sweep
takes about a minute.
"""

from __future__ import annotations

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from masgrid._private.platform.commands.serve_cli import compose_model
from tests.support.engine import engine_missing
from tests.support.serve_replicas import engine_counters, replica_ids, settled_counters

pytestmark = pytest.mark.slow

RUNS, AGENTS = 4, 4


@pytest.fixture(scope="module")
def two_replicas(tiny_model, serve_port):
    if engine_missing():
        pytest.skip(engine_missing())
    from ray import serve

    from masgrid._private.actors.serving.deploy import deploy

    settings = compose_model([
        "model=tiny_cpu", "model.serving.replicas=2", "model.serving.router=prefix_aware",
        # each replica reserves 0.1 (its actor) + 0.1 (its one engine worker) of the session's 2 Ray CPUs;
        # at Serve LLM's default of 1 CPU per replica actor the second replica would never be placed
        "model.serving.replica_cpus=0.1", "model.serving.cpus_per_worker=0.1", "model.serving.ingress_cpus=0.1",
        "model.serving.app=tiny-pfx", "model.serving.route_prefix=/tiny-pfx",
        f"model.serving.http_port={serve_port}",  # the session's one Serve proxy
        f"model.serving.model_path={tiny_model}", f"model.tokenizer=hf:{tiny_model}/tokenizer.json",
        "model.max_tokens=8", "model.max_retries=0"])
    spec = deploy(settings)
    try:
        yield settings, spec
    finally:
        serve.delete(spec.app)


def test_simas_sweep_is_served_by_both_replicas_behind_the_prefix_router(two_replicas, tmp_path):
    from ray import serve

    settings, spec = two_replicas
    deployment = spec.llm_deployment_name("tiny")
    status = serve.status().applications[spec.app]
    assert status.deployments[deployment].replica_states == {"RUNNING": 2}
    ids = replica_ids(spec.app, deployment)
    assert len(ids) == 2, ids
    before = engine_counters(ids)  # fresh engines: nothing counted yet, the counters are absent (0)

    model = settings.model_dump()
    cfgs = [RunConfig.from_mapping({
        "task": "simas/mmlu", "protocol": "groupchat", "agents": AGENTS, "seed": seed, "backend": "serve",
        "model": model, "results_dir": str(tmp_path), "preflight": False,
        "simas": {"rounds": 1, "profiles": "pool", "subject": "college_physics", "question": seed}})
        for seed in range(RUNS)]
    run_many(cfgs, max_concurrent=RUNS)

    runs = pd.read_parquet(tmp_path / "runs")
    events = pd.read_parquet(tmp_path / "events")
    calls = events[events["kind"] == "model_call"]
    assert len(runs) == RUNS and (runs["status"] == "ok").all(), runs[["status", "error"]]
    assert (runs["model_errors"] == 0).all() and calls["error"].isna().all()
    # Algorithm 1 with T = 1: every agent speaks once, then the answerer gives the final answer
    assert (runs["model_calls"] == AGENTS + 1).all() and len(calls) == RUNS * (AGENTS + 1)
    assert (calls["usage_source"] == "server").all()
    assert (runs["tokens_out"] > 0).all() and (runs["tokens_cached"] > 0).all()
    assert (runs["cache_hit_rate"] > 0).all()  # later turns repeat the agent's history

    # the engines' own counters, per replica: both served calls, together exactly the sweep's
    after = settled_counters(ids, requests=sum(c["request_success_total"] for c in before.values()) + len(calls))
    delta = {rid: {k: after[rid][k] - before[rid][k] for k in after[rid]} for rid in ids}
    served = {rid: int(d["request_success_total"]) for rid, d in delta.items()}
    assert all(n > 0 for n in served.values()), served
    assert sum(served.values()) == len(calls)
    assert all(d["generation_tokens_total"] > 0 for d in delta.values())
    assert sum(d["prompt_tokens_total"] for d in delta.values()) == calls["tokens_in"].sum()
    assert sum(d["generation_tokens_total"] for d in delta.values()) == calls["tokens_out"].sum()
    assert sum(d["prefix_cache_hits_total"] for d in delta.values()) == calls["tokens_cached"].sum()
