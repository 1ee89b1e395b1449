"""One Serve LLM app with two replicas of the tiny model (vLLM's CPU build) behind Serve LLM's
PrefixCacheAffinityRouter, deployed once for every check that needs two real replicas (each
two-replica deploy costs about 2.5 minutes of both cores):

- execution.prefix_cache=reset_per_run: the reset reaches every replica, not the one a request
  would be routed to;
- admission's load reading is the replicas' own count of ongoing requests;
- a short SIMAS sweep by DeploymentHandle (backend=serve): both replicas serve calls, and the
  tokens and cache hits the runs record are the engines' own.

Which replica served what is read outside masgrid (tests/support/serve_replicas.py): the
replicas' ids from the names Serve gives their actors, and each engine's request, token and
prefix-cache counters from the metrics Serve LLM exports through Ray, tagged with the replica
id. The sweep runs first, on fresh engines; the reset check reads its counters as differences
from a quiet start.
"""

from __future__ import annotations

import json
import urllib.request

import pandas as pd
import pytest

from masgrid._private.platform.commands.serve_cli import compose_model
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.support.engine import engine_missing
from tests.support.load_under_requests import readings_until, settles_to, streams_in_flight
from tests.support.serve_replicas import engine_counters, quiet_counters, replica_ids, settled_counters

pytestmark = pytest.mark.slow

RUNS, AGENTS = 4, 4
#: twelve prompts, each well over one KV block, no two sharing a first character: the router
#: finds no prefix of one in another and spreads them over the replicas (its smallest-tenant
#: rule), and sends each repeat back to the replica that computed it (its prefix match)
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")


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


def replicas_of(spec) -> list[str]:
    ids = replica_ids(spec.app, spec.llm_deployment_name("tiny"))
    assert len(ids) == 2, ids
    return ids


def uncached(url: str, prompts: list[str]) -> int:
    """Of the prompts, sent one after another, how many found nothing of theirs cached."""
    n = 0
    for prompt in prompts:
        body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": prompt}], "max_tokens": 1})
        request = urllib.request.Request(url, body.encode(), {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as response:
            usage = json.loads(response.read())["usage"]
        n += ((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0) == 0
    return n


def test_simas_sweep_is_served_by_both_replicas_behind_the_prefix_router(two_replicas, tmp_path):
    from ray import serve

    settings, spec = two_replicas
    deployment = spec.llm_deployment_name("tiny")
    status = serve.status().applications[spec.app]
    assert status.deployments[deployment].replica_states == {"RUNNING": 2}
    ids = replicas_of(spec)
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


def test_the_reset_reaches_every_replica(two_replicas):
    from masgrid._private.platform.cluster.prefix_cache import reset_prefix_cache

    settings, spec = two_replicas
    url = f"http://127.0.0.1:{spec.http_port}/tiny-pfx/v1/chat/completions"
    prompts = [f"{word} " * 220 for word in WORDS]
    ids = replicas_of(spec)
    before = quiet_counters(ids)  # the sweep's calls (test above) may still be on their way
    assert uncached(url, prompts) == len(prompts)  # new to both replicas
    after = settled_counters(ids, requests=sum(c["request_success_total"] for c in before.values()) + len(prompts))
    served = {rid: after[rid]["request_success_total"] - before[rid]["request_success_total"] for rid in ids}
    assert all(n > 0 for n in served.values()), served  # both replicas hold some of the prompts
    assert uncached(url, prompts) == 0  # each repeat went back to the replica that holds it
    assert reset_prefix_cache(settings) == 2
    assert uncached(url, prompts) == len(prompts)  # both replicas had forgotten theirs


def test_the_load_of_a_serve_app_is_its_replicas_ongoing_requests(two_replicas):
    from masgrid._private.platform.sweeps.admission import Load, reader_for

    settings, spec = two_replicas
    reader = reader_for(settings)
    # quiet first; the previous test's last calls may still be counted for a moment (settles_to)
    assert reader is not None and settles_to(reader.read, Load(0, 0)) == Load(0, 0)
    # four streamed calls, each past its first token before the first reading (a race of readings
    # against calls in threads can lose on a saturated machine: test_admission.py)
    with streams_in_flight(f"http://127.0.0.1:{spec.http_port}/tiny-pfx/v1", "tiny", 4, 3000):
        readings = readings_until(reader.read, lambda r: r.running >= 2)
    assert max(r.running for r in readings) >= 2, readings
    assert settles_to(reader.read, Load(0, 0)) == Load(0, 0)


def test_runs_through_serve_each_start_on_a_reset_cache(two_replicas, tmp_path):
    settings, _ = two_replicas
    cfgs = [RunConfig.from_mapping({"task": "sorting", "protocol": "kv", "agents": 2, "k": 3, "max_rounds": 2,
                                    "seed": 3, "backend": "serve", "model": settings.model_dump(),
                                    "results_dir": str(tmp_path / name), "preflight": False,
                                    "execution": {"prefix_cache": "reset_per_run"}}) for name in ("a", "b")]
    summaries = run_many(cfgs, max_concurrent=2, admission="load")
    assert [s.status != "failed" for s in summaries] == [True, True], [s.error for s in summaries]
    for name in ("a", "b"):
        events = pd.read_parquet(tmp_path / name / "events")
        calls = events[events["kind"] == "model_call"].sort_values("seq")
        # b repeats a's prompts, and the router sends them where a's are cached: only the reset
        # in between leaves its first call nothing to reuse
        assert int(calls["tokens_cached"].iloc[0]) == 0
        assert bool(pd.read_parquet(tmp_path / name / "runs").iloc[0]["prefix_cache_reset"]) is True
