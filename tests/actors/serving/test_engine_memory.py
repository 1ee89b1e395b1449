"""Too little memory for the KV cache: refused before anything starts where config.json tells
(spec.check_kv_cache), else in one line as soon as the real engine says so, with the Serve
app deleted and no engine process left (deploy.py, engine_start.py)."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from masgrid._private.actors.serving.engine_start import EngineStartWatch, explain, settled
from masgrid._private.actors.serving.spec import ServingError, parse_serving
from masgrid._private.platform.commands.serve_cli import compose_model
from tests.support.engine import engine_missing

#: vLLM 0.32's words (the CPU build), as the replica's stderr carries them
KV_LINE = ("ValueError: To serve at least one request with the model's max seq len (524288), (2.0 GiB KV cache is "
           "needed, which is larger than the available KV cache memory (1.0 GiB). Based on the available memory, the "
           "estimated maximum model length is 262016. Try increasing `gpu_memory_utilization` (which also controls "
           "CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See "
           "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
NODE_LINE = ("ValueError: Available memory on node 0 (11.01/22.59 GiB) on kv cache allocation is less than requested "
             "memory for kv (4096.0 GiB). Decrease --kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU "
             "memory used by other processes.")
PREFIX = "(EngineCore pid=18655) ERROR 11-26 18:25:57 [core.py:1510] "


def long_config(path: Path, layers: int = 8, kv_heads: int = 4, positions: int = 524288, **extra) -> Path:
    """A config.json of the tiny model's shape with more layers, KV heads and positions."""
    path.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "torch_dtype": "float32",
              "hidden_size": 128, "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": kv_heads,
              "head_dim": 32, "max_position_embeddings": positions, "use_sliding_window": False, **extra}
    (path / "config.json").write_text(json.dumps(config))
    return path


def spec_for(model: Path, *overrides: str):
    return parse_serving(compose_model(["model=tiny_cpu", f"model.serving.model_path={model}", *overrides]).serving)


def test_config_arithmetic_refuses_a_kv_cache_too_small_before_anything_starts(tmp_path):
    model = long_config(tmp_path / "m")
    with pytest.raises(ServingError) as refused:
        spec_for(model, "model.serving.engine.max_model_len=524288").check_kv_cache()
    text = str(refused.value)
    assert "\n" not in text and text.startswith("model.serving.kv_cache_gib:")
    # 8 layers x 4 KV heads x 32 dims x 2 bytes (float32 served in 16 bits) x 2 = 4 KiB a token
    assert "524,288 tokens needs at least 2.00 GiB" in text and "4,096 bytes per token" in text
    assert "kv_cache_gib=1" in text and "at most about 262,144 tokens fit" in text
    spec_for(model, "model.serving.engine.max_model_len=262144").check_kv_cache()  # exactly 1 GiB: the engine decides
    spec_for(model, "model.serving.engine.max_model_len=524288", "model.serving.kv_cache_gib=2").check_kv_cache()
    # TP 2 halves each rank's KV heads; float32 kept as asked doubles the bytes
    spec_for(model, "model.serving.engine.max_model_len=524288", "model.serving.layout=tp2").check_kv_cache()
    with pytest.raises(ServingError, match="4 bytes"):
        spec_for(model, "model.serving.engine.max_model_len=262144", "+model.serving.engine.dtype=float32").check_kv_cache()


def test_config_arithmetic_leaves_other_attention_to_the_engine(tmp_path):
    for extra in ({"sliding_window": 4096, "use_sliding_window": True}, {"kv_lora_rank": 512},
                  {"layer_types": ["sliding_attention", "full_attention"] * 4}):
        model = long_config(tmp_path / str(len(list(tmp_path.iterdir()))), **extra)
        spec_for(model, "model.serving.engine.max_model_len=524288").check_kv_cache()


def test_the_engine_refusal_is_read_from_the_replica_output():
    watch = EngineStartWatch("tiny")
    lines = [PREFIX + "EngineCore failed to start.", PREFIX + "Traceback (most recent call last):",
             PREFIX + "    raise ValueError(", PREFIX + KV_LINE, "Process EngineCore:", KV_LINE,
             "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"]
    watch.feed("1", ["ValueError: before any failure, not the cause"])
    assert watch.cause is None
    watch.feed("1", lines)
    assert watch.cause is not None and watch.cause.startswith("ValueError: To serve at least one request")
    assert "docs.vllm.ai" not in watch.cause and watch.seen_at is not None

    line = explain(watch.cause, 1)
    assert line == ("too little memory for the KV cache: one request of engine.max_model_len=524,288 tokens needs "
                    "2.0 GiB, the engine has 1.0 GiB: raise model.serving.kv_cache_gib (now 1), or lower "
                    "model.serving.engine.max_model_len (at most 262,016 tokens fit)")
    assert "gpu_memory_utilization" in explain(watch.cause, None)  # a GPU engine: its own knob
    assert explain(NODE_LINE.removeprefix("ValueError: "), 4096) == (
        "too little memory for the KV cache: model.serving.kv_cache_gib=4096 asks 4096.0 GiB, node 0 has 11.01 of "
        "22.59 GiB free: lower model.serving.kv_cache_gib")
    assert explain("OSError: no such file", 1) == "the engine refused to start: OSError: no such file"
    # memory settings fail every attempt alike: the deploy stops at once; other causes get Serve's retry
    assert settled(watch.cause) and settled(NODE_LINE) and not settled("OSError: no such file")


def test_the_replicas_tracebacks_are_held_back_and_dropped_once_the_engine_refused():
    """Where the driver prints its workers' output, the app's replica and Serve controller
    lines wait `hold_s` before printing, and are dropped once the engine refused: the one
    line is not buried under the failure's tracebacks. Ray's own printer, registered by any
    earlier `ray.init` of this process, is set aside: it fails on the synthetic batches."""
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

    printed: list[dict] = []
    before = dispatcher.handlers
    dispatcher.handlers = []
    dispatcher.add_handler("ray_print_logs", printed.append)
    try:
        watch = EngineStartWatch("tiny", hold_s=0.2)
        watch._hold()
        replica = "ServeReplica:tiny:LLMServer:tiny"
        dispatcher.emit({"actor_name": "run:x", "lines": ["elsewhere"]})
        dispatcher.emit({"actor_name": replica, "lines": ["loading weights"]})
        assert [b["lines"] for b in printed] == [["elsewhere"]]  # the replica's line waits
        time.sleep(0.25)
        watch._release()
        assert [b["lines"] for b in printed] == [["elsewhere"], ["loading weights"]]
        dispatcher.emit({"actor_name": replica, "lines": [PREFIX + "EngineCore failed to start.", PREFIX + KV_LINE]})
        watch.feed("1", [PREFIX + "EngineCore failed to start.", PREFIX + KV_LINE])
        dispatcher.emit({"actor_name": "ServeController", "lines": ["Traceback (most recent call last):"]})
        time.sleep(0.25)
        watch._release()
        assert len(printed) == 2  # the failure's output is dropped
        watch._restore()
        dispatcher.emit({"actor_name": replica, "lines": ["after"]})
        assert printed[-1]["lines"] == ["after"]  # Ray's printer is back
    finally:
        dispatcher.handlers = before


def marked_engines(mark: str) -> list[int]:
    """vLLM processes (`VLLM::EngineCore`, `VLLM::Worker`) started for this test: their
    environment carries its mark (the Serve replica's runtime_env), other sessions' do not."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if comm.startswith("VLLM") and f"MASGRID_TEST_MARK={mark}".encode() in env:
            found.append(int(pid))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("case", ["max_model_len", "node_memory"])
def test_real_engine_refusing_its_kv_cache_is_one_line_within_seconds(case, tmp_path, serve_port, monkeypatch):
    """Through Ray Serve LLM and vLLM's CPU build: the engine loads, finds its KV cache too
    small (max_model_len beyond kv_cache_gib, with the config arithmetic switched off so the
    engine decides) or asks more memory than the node has; deploy raises one line with the
    engine's numbers seconds after the engine printed them, instead of after Serve's retry,
    and leaves neither the app nor an engine process."""
    if engine_missing():
        pytest.skip(engine_missing())
    from ray import serve

    from masgrid._private.actors.serving.deploy import EngineRefused, deploy
    from masgrid._private.actors.serving.spec import ServingSpec
    from masgrid._private.actors.serving.tiny_model import TinySpec, build_tiny_model

    if case == "max_model_len":
        model = tmp_path / "tiny-long"
        build_tiny_model(model, TinySpec(num_hidden_layers=8, num_key_value_heads=4, max_position_embeddings=524288))
        overrides = ["model.serving.engine.max_model_len=524288"]
        monkeypatch.setattr(ServingSpec, "check_kv_cache", lambda self: None)
    else:
        model = tmp_path / "tiny"
        build_tiny_model(model)
        overrides = ["model.serving.kv_cache_gib=65536"]  # 64 TiB: more than any node here has
    mark = uuid.uuid4().hex
    app = f"kv-{case.replace('_', '-')}"
    settings = compose_model(["model=tiny_cpu", f"model.serving.model_path={model}", f"model.serving.app={app}",
                              f"model.serving.route_prefix=/{app}", f"model.serving.http_port={serve_port}",
                              f"model.tokenizer=hf:{model}/tokenizer.json", *overrides])
    settings.serving["runtime_env"] = {"env_vars": {"MASGRID_TEST_MARK": mark}}
    started = time.monotonic()
    with pytest.raises(EngineRefused) as refused:
        deploy(settings)
    took = time.monotonic() - started
    text = str(refused.value)
    print(f"{case}: {took:.1f} s to the error, {refused.value.after_s:.1f} s after the engine said why: {text}")
    assert "\n" not in text and "too little memory for the KV cache" in text, text
    if case == "max_model_len":
        assert "524,288 tokens needs 2.0 GiB, the engine has 1.0 GiB" in text and "kv_cache_gib (now 1)" in text
        assert "at most 262,016 tokens fit" in text
    else:
        assert "kv_cache_gib=65536 asks 65536.0 GiB" in text
    assert refused.value.after_s is not None and refused.value.after_s < 20  # measured ~6.5 s (replica stop)
    assert app not in serve.status().applications
    assert marked_engines(mark) == []
