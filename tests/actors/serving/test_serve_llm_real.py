"""The real Ray Serve LLM path: LLMConfig from every preset, and the tiny model served by
vLLM's CPU build with tensor parallelism 2 behind Serve LLM's prefix-aware router, reached
through the DeploymentHandle, Serve's OpenAI route, and backend=openai against that route."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from masgrid._private.actors.serving.spec import parse_serving
from masgrid._private.platform.commands.serve_cli import compose_model
from masgrid._private.resources import conf_files
from tests.support.engine import engine_missing

VLLM_PRESETS = sorted(p.stem for _, p in conf_files("model") if p.suffix == ".yaml" and "kind: vllm" in p.read_text())


def test_presets_are_listed():
    assert {"tiny_cpu", "gpt_oss_120b", "deepseek_v31", "qwen3_next_80b"} <= set(VLLM_PRESETS)


@pytest.mark.parametrize("preset", VLLM_PRESETS)
def test_every_vllm_preset_is_accepted_by_the_real_llm_config(preset):
    """The mapping masgrid builds (the dry run prints the same) is what ray.serve.llm takes."""
    if engine_missing():
        pytest.skip(engine_missing())
    from ray.serve.llm import LLMConfig, build_openai_app

    settings = compose_model([f"model={preset}"])
    spec = parse_serving(settings.serving)
    args = spec.openai_app_args(settings.request_model)
    configs = [LLMConfig(**config) for config in args["llm_configs"]]
    assert configs[0].engine_kwargs["tensor_parallel_size"] == spec.parallelism.tensor_parallel_size
    if spec.accelerator == "cpu":
        assert configs[0].accelerator_config.kind == "cpu"
    app = build_openai_app({**args, "llm_configs": configs})
    assert app is not None


def vllm_workers() -> int:
    out = subprocess.run(["ps", "-eo", "comm"], capture_output=True, text=True).stdout
    return sum(line.startswith("VLLM") for line in out.splitlines())


@pytest.fixture(scope="module")
def tp2_app(tiny_model, serve_port):
    if engine_missing():
        pytest.skip(engine_missing())
    from ray import serve

    from masgrid._private.actors.serving.deploy import deploy

    settings = compose_model(["model=tiny_cpu", "model.serving.layout=tp2", "model.serving.router=prefix_aware",
                              "model.serving.app=tiny-tp2", "model.serving.route_prefix=/tiny-tp2",
                              f"model.serving.http_port={serve_port}",  # the session's one Serve proxy
                              f"model.serving.model_path={tiny_model}", f"model.tokenizer=hf:{tiny_model}/tokenizer.json",
                              "model.max_tokens=24"])
    spec = deploy(settings)
    warm_up(f"http://127.0.0.1:{spec.http_port}/tiny-tp2/v1/chat/completions")
    yield settings, spec
    serve.delete(spec.app)


def warm_up(url: str, timeout_s: float = 180.0) -> None:
    """One call before the test's own: a freshly deployed TP=2 CPU engine's first forward pass
    (both ranks' kernels, gloo's first all-reduce) took over the preflight's 15 s when earlier
    tests had left the 2 cores busy, though the app reported RUNNING; later calls take a second."""
    import json
    import urllib.request

    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).encode()
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        assert response.status == 200


@pytest.mark.slow
def test_tp2_behind_the_prefix_router_through_handle_route_and_openai(tp2_app, tmp_path, tiny_model):
    from ray import serve

    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_many
    from masgrid._private.platform.sweeps.preflight import preflight

    settings, spec = tp2_app
    status = serve.status().applications[spec.app]
    assert str(status.status).endswith("RUNNING")
    llm = spec.openai_app_args("tiny")["llm_configs"][0]
    assert llm["engine_kwargs"]["tensor_parallel_size"] == 2
    assert llm["deployment_config"]["request_router_config"]["request_router_class"].endswith("PrefixCacheAffinityRouter")
    assert vllm_workers() >= 2  # one engine worker process per TP rank

    base = {"task": "sorting", "protocol": "kv", "agents": 2, "k": 2, "max_rounds": 3}
    model = settings.model_dump()
    routes = {
        "handle": {"backend": "serve", "model": model},
        "http": {"backend": "serve", "model": {**model, "serving": {**model["serving"], "route": "http"}}},
        "openai": {"backend": "openai", "model": {**model, "serving": {},
                                                  "base_url": f"http://127.0.0.1:{spec.http_port}/tiny-tp2/v1"}},
    }
    for name, extra in routes.items():
        cfg = RunConfig.from_mapping({**base, **extra, "results_dir": str(tmp_path / name)})
        preflight([cfg])
        (summary,) = run_many([cfg])
        run = pd.read_parquet(tmp_path / name / "runs").iloc[0]
        assert run["status"] == "ok" and run["model_calls"] == 6, (name, run["error"])
        calls = pd.read_parquet(tmp_path / name / "events").query("kind == 'model_call'")
        assert (calls["usage_source"] == "server").all()
        assert calls["tokens_cached"].notna().all() and run["cache_hit_rate"] > 0  # histories share prefixes
        assert_prompt_tokens_are_the_templates(calls, pd.read_parquet(tmp_path / name / "events"), tiny_model)


def assert_prompt_tokens_are_the_templates(calls, events, tiny_model) -> None:
    """usage.prompt_tokens through Serve equals the chat template's token count of the
    history the events rebuild (computed here with transformers, not by masgrid)."""
    from transformers import AutoTokenizer

    from masgrid._private.analysis.transcript import calls as rebuilt_calls

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    recorded = dict(zip(events["seq"].astype(int), events["tokens_in"].astype(int)))
    checked = 0
    for call in rebuilt_calls(events):
        ids = tok.apply_chat_template(call.messages, add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        assert recorded[call.reply.seq] == len(ids)
        checked += 1
    assert checked == len(calls)
