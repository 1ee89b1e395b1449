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


class _HandleCaller:
    """An agent host stand-in: a fresh process calling a deployment by handle, as hosts do."""

    def call(self, settings: dict, app: str, deployment: str) -> dict:
        import asyncio
        import sys

        from ray import serve

        from masgrid._private.actors.backends.base import BackendSettings
        from masgrid._private.actors.serving.handle_backend import HandleChatBackend
        from masgrid._private.actors.serving.spec import parse_serving
        from masgrid._private.envs.tokens import get_counter

        model = BackendSettings.model_validate(settings)
        backend = HandleChatBackend(serve.get_deployment_handle(deployment, app_name=app), model,
                                    parse_serving(model.serving), get_counter("approx"), None)
        done = asyncio.run(backend.complete([{"role": "user", "content": "Say something."}]))
        return {"error": done.error, "text": done.text, "tokens_out": done.tokens_out,
                "modules": sorted(m for m in ("vllm", "torch", "transformers") if m in sys.modules)}


def test_an_agent_host_calls_the_engine_by_handle_without_importing_vllm(tp2_app):
    """masgrid's engine deployment answers `chat_plain` with plain dicts: the calling process
    gets a real completion and never imports vLLM or torch (benchmarks/results/handle_host.md)."""
    import ray

    from masgrid._private.actors.serving.chat_body import PLAIN_METHOD
    from masgrid._private.actors.serving.deploy import target
    from masgrid._private.actors.serving.plain_server import LLMServer

    settings, spec = tp2_app
    assert callable(getattr(LLMServer, PLAIN_METHOD))
    app, deployment = target(settings, spec)
    caller = ray.remote(_HandleCaller).options(num_cpus=0).remote()
    try:
        got = ray.get(caller.call.remote(settings.model_dump(), app, deployment), timeout=120)
    finally:
        ray.kill(caller)
    assert got["error"] is None and got["tokens_out"] > 0 and got["text"], got
    assert got["modules"] == [], got


class _StockChat:
    """A deployment with Serve LLM's `chat` only (an app masgrid did not deploy): it is handed
    vLLM's request type and yields the answer, as LLMServer.chat does."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def chat(self, request):
        self.seen.append(type(request).__name__)
        yield {"id": "c", "object": "chat.completion", "created": 0, "model": request.model,
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "stock"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}

    def requests(self) -> list[str]:
        return self.seen


def test_a_deployment_without_chat_plain_is_called_through_chat(tp2_app):
    import asyncio

    from ray import serve

    from masgrid._private.actors.serving import handle_backend
    from masgrid._private.actors.serving.handle_backend import HandleChatBackend
    from masgrid._private.envs.tokens import get_counter

    settings, spec = tp2_app
    handle = serve.run(serve.deployment(_StockChat, ray_actor_options={"num_cpus": 0}).bind(),
                       name="stock-chat", route_prefix=None)
    try:
        backend = HandleChatBackend(handle, settings, spec, get_counter("approx"), None)
        for _ in range(2):
            done = asyncio.run(backend.complete([{"role": "user", "content": "hi"}]))
            assert done.error is None and done.text == "stock" and done.tokens_out == 1, done
        assert ("stock-chat", "_StockChat") in handle_backend._WITHOUT_PLAIN
        # both calls reached chat with vLLM's request type; the second went there directly
        assert handle.requests.remote().result(timeout_s=30) == ["ChatCompletionRequest"] * 2
    finally:
        serve.delete("stock-chat")
