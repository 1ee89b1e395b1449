"""execution.prefix_cache=reset_per_run and admission's load reading on a real Ray Serve LLM
app with two replicas of the tiny model (vLLM's CPU build): the reset reaches every replica,
not the one a request would be routed to, and the load is read from the replicas' own count
of ongoing requests."""

from __future__ import annotations

import json
import urllib.request

import pandas as pd
import pytest

from masgrid._private.platform.commands.serve_cli import compose_model
from tests.support.engine import engine_missing
from tests.support.load_under_requests import readings_until, settles_to, streams_in_flight

PROMPT = [{"role": "user", "content": "alpha beta gamma delta " * 220}]  # well over one KV block


@pytest.fixture(scope="module")
def two_replicas(tiny_model, serve_port):
    if engine_missing():
        pytest.skip(engine_missing())
    from ray import serve

    from masgrid._private.actors.serving.deploy import run_app, serve_llm
    from masgrid._private.actors.serving.spec import parse_serving

    settings = compose_model(["model=tiny_cpu", "model.serving.replicas=2", "model.serving.app=tiny-reset",
                              "model.serving.route_prefix=/tiny-reset", f"model.serving.http_port={serve_port}",
                              f"model.serving.model_path={tiny_model}",
                              f"model.tokenizer=hf:{tiny_model}/tokenizer.json", "model.max_tokens=4"])
    spec = parse_serving(settings.serving)
    # Serve LLM reserves 1 CPU per replica besides its engine workers: two replicas would not fit
    # the session's 2 CPUs, so this app asks 0.4 each (the engines use the cores regardless)
    LLMConfig, build_openai_app = serve_llm()
    args = spec.openai_app_args(settings.request_model)
    for config in args["llm_configs"]:
        config["deployment_config"]["ray_actor_options"] = {"num_cpus": 0.4}
    args["llm_configs"] = [LLMConfig(**config) for config in args["llm_configs"]]
    run_app(build_openai_app(args), spec, None)
    yield settings, spec
    serve.delete(spec.app)


def chat(url: str) -> dict:
    body = json.dumps({"model": "tiny", "messages": PROMPT, "max_tokens": 1}).encode()
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def uncached(url: str, calls: int) -> int:
    """Of `calls` identical requests one after another, how many found nothing cached: one per
    replica that had not seen the prompt since its cache was last emptied."""
    n = 0
    for _ in range(calls):
        usage = chat(url)["usage"]
        n += ((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0) == 0
    return n


@pytest.mark.slow
def test_the_reset_reaches_every_replica(two_replicas):
    from masgrid._private.platform.cluster.prefix_cache import reset_prefix_cache

    settings, spec = two_replicas
    url = f"http://127.0.0.1:{spec.http_port}/tiny-reset/v1/chat/completions"
    # 12 calls: the router sends some to each replica (all 12 to one: p = 2 * 2^-12)
    assert uncached(url, 12) == 2  # each replica computed the prompt once
    assert uncached(url, 12) == 0  # both hold it now
    assert reset_prefix_cache(settings) == 2
    assert uncached(url, 12) == 2  # both had forgotten it


@pytest.mark.slow
def test_the_load_of_a_serve_app_is_its_replicas_ongoing_requests(two_replicas):
    from masgrid._private.platform.sweeps.admission import Load, reader_for

    settings, spec = two_replicas
    reader = reader_for(settings)
    assert reader is not None and reader.read() == Load(0, 0)
    # four streamed calls, each past its first token before the first reading (a race of readings
    # against calls in threads can lose on a saturated machine: test_admission.py)
    with streams_in_flight(f"http://127.0.0.1:{spec.http_port}/tiny-reset/v1", "tiny", 4, 3000):
        readings = readings_until(reader.read, lambda r: r.running >= 2)
    assert max(r.running for r in readings) >= 2, readings
    assert settles_to(reader.read, Load(0, 0)) == Load(0, 0)


@pytest.mark.slow
def test_runs_through_serve_each_start_on_a_reset_cache(two_replicas, tmp_path):
    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_many

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
        assert int(calls["tokens_cached"].iloc[0]) == 0  # b repeats a's prompts, on a cache reset in between
        assert bool(pd.read_parquet(tmp_path / name / "runs").iloc[0]["prefix_cache_reset"]) is True
