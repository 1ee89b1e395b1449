"""GH200 presets resolve and validate offline; impossible deployments fail before Ray."""

from __future__ import annotations

import pytest

from masgrid._private.actors.serving.deploy import ServingUnavailable, build_application, describe, serve_llm
from masgrid._private.actors.serving.spec import ServingError, parse_serving
from masgrid._private.platform.commands.serve_cli import compose_model

PRESETS = ["deepseek_v31", "qwen3_next_80b", "gpt_oss_120b"]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("layout,tp,pp", [("tp16", 16, 1), ("tp4pp4", 4, 4)])
def test_gh200_presets_resolve(preset: str, layout: str, tp: int, pp: int) -> None:
    settings = compose_model([f"model={preset}", f"model.serving.layout={layout}"])
    plan = describe(settings)
    engine = plan["llm_config"]["engine_kwargs"]
    assert (engine["tensor_parallel_size"], engine["pipeline_parallel_size"]) == (tp, pp)
    assert engine["max_model_len"] >= 128 * 1024
    assert engine["distributed_executor_backend"] == "ray"
    assert plan["llm_config"]["model_loading_config"]["model_source"].startswith("/")
    placement = plan["placement"]
    assert placement["gpus_per_replica"] == 16 and placement["nodes_per_replica"] == 4
    assert placement["tp_spans_nodes"] is (tp == 16)
    workers = placement["workers"]
    assert sorted({w["node"] for w in workers}) == [0, 1, 2, 3]
    if layout == "tp4pp4":  # each pipeline stage is one node's tensor-parallel group
        assert all(w["node"] == w["pp_stage"] for w in workers)
    # GH200 has no Ray accelerator enum value: pinned through the node resource instead.
    assert "accelerator_type" not in plan["llm_config"]
    assert plan["llm_config"]["placement_group_config"]["bundle_per_worker"]["accelerator_type:GH200"] > 0


def test_deployment_config_is_accepted_by_serve() -> None:
    from ray.serve._private.config import DeploymentConfig

    spec = parse_serving(compose_model(["model=qwen3_next_80b"]).serving)
    assert DeploymentConfig(**spec.deployment_config()).num_replicas == 1


def test_prefix_aware_router_for_several_replicas() -> None:
    settings = compose_model(["model=gpt_oss_120b", "model.serving.layout=tp4", "model.serving.replicas=4",
                              "model.serving.router=prefix_aware"])
    dc = describe(settings)["llm_config"]["deployment_config"]
    assert dc["num_replicas"] == 4
    assert dc["request_router_config"]["request_router_class"].endswith("PrefixCacheAffinityRouter")


def _vllm(**serving: object) -> dict:
    base = dict(compose_model(["model=gpt_oss_120b"]).serving)
    base.update(serving)
    return base


@pytest.mark.parametrize("override,needle", [
    ({"model_path": "openai/gpt-oss-120b"}, "model_path: weights come from an absolute local path"),
    ({"model_path": "s3://bucket/gpt-oss"}, "model_path"),
    ({"model_path": None}, "model_path"),
    ({"layout": "tp8pp8"}, "layout: 'tp8pp8' is not one of"),
    ({"layouts": {"big": {"tensor_parallel_size": 16, "pipeline_parallel_size": 2}}, "layout": "big"}, "need 32 GPUs"),
    ({"layouts": {"odd": {"tensor_parallel_size": 3}}, "layout": "odd"}, "does not divide"),
    ({"replicas": 2}, "2 replica(s)"),
    ({"engine": {"max_model_len": 262144}}, "engine.max_model_len"),
    ({"layouts": {"one": {"tensor_parallel_size": 1}}, "layout": "one", "cluster": {"gpu_memory_gb": 40}}, "do not fit"),
])
def test_impossible_deployments_are_named(override: dict, needle: str) -> None:
    with pytest.raises(ServingError) as info:
        parse_serving(_vllm(**override))
    assert needle in str(info.value)
    assert str(info.value).startswith("model.serving.")


def test_weights_must_exist_locally(tmp_path) -> None:
    settings = compose_model(["model=gpt_oss_120b", f"model.serving.model_path={tmp_path}/gpt-oss-120b"])
    assert describe(settings)["weights"]["present_here"] is False
    with pytest.raises(ServingError, match="no model at"):
        describe(settings, check_paths=True)
    model = tmp_path / "gpt-oss-120b"
    model.mkdir()
    (model / "config.json").write_text("{}")
    with pytest.raises(ServingError, match="config.json names no architecture"):
        describe(settings, check_paths=True)
    (model / "config.json").write_text('{"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss"}')
    with pytest.raises(ServingError, match="no weight files"):
        describe(settings, check_paths=True)
    (model / "model-00001-of-00002.safetensors").write_bytes(b"")
    with pytest.raises(ServingError, match="no tokenizer"):
        describe(settings, check_paths=True)
    (model / "tokenizer.json").write_text("{}")
    assert describe(settings, check_paths=True)["weights"]["present_here"] is True
    (model / "config.json").write_text("{not json")
    with pytest.raises(ServingError, match="not readable JSON"):
        describe(settings, check_paths=True)


def test_vllm_path_without_vllm_says_what_to_install(without_vllm) -> None:
    with pytest.raises(ServingUnavailable) as info:
        serve_llm()
    message = str(info.value)
    assert "\n" not in message and "pip install 'masgrid[vllm]'" in message
    settings = compose_model(["model=gpt_oss_120b"])
    with pytest.raises(ServingUnavailable):
        build_application(settings, parse_serving(settings.serving))


def test_prefix_router_is_for_vllm_replicas() -> None:
    with pytest.raises(ServingError, match="model.serving.router"):
        parse_serving({"kind": "standin", "router": "prefix_aware"})


def test_standin_preset_describes_its_deployment() -> None:
    plan = describe(compose_model(["model=standin", "model.serving.route=http", "model.serving.http_port=9123"]))
    assert plan["agents_reach_it_by"] == "http"
    assert plan["serve"]["openai_base_url"] == "http://127.0.0.1:9123/standin/v1"
    assert plan["serve"]["handle_target"] == "masgrid-standin/StandIn"


def test_prefix_router_settings_reach_serve_under_the_routers_own_names() -> None:
    """Serve passes request_router_kwargs to the router's initialize_state: the names below are
    its parameters in Ray 2.60 (PrefixCacheAffinityRouter.initialize_state), written out here."""
    from ray.serve._private.config import DeploymentConfig

    settings = compose_model(["model=gpt_oss_120b", "model.serving.layout=tp4", "model.serving.replicas=4",
                              "model.serving.router=prefix_aware", "+model.serving.prefix_router.imbalanced_threshold=8",
                              "+model.serving.prefix_router.eviction=true"])
    router = describe(settings)["llm_config"]["deployment_config"]["request_router_config"]
    assert router["request_router_kwargs"] == {
        "imbalanced_threshold": 8, "match_rate_threshold": 0.1, "do_eviction": True,
        "eviction_threshold_chars": 400_000, "eviction_target_chars": 360_000, "eviction_interval_secs": 10}
    spec = parse_serving(settings.serving)
    config = DeploymentConfig(**spec.deployment_config()).request_router_config
    assert config.request_router_kwargs["imbalanced_threshold"] == 8


def test_prefix_router_without_settings_leaves_the_routers_defaults() -> None:
    spec = parse_serving(_vllm(router="prefix_aware"))
    assert "request_router_kwargs" not in spec.deployment_config()["request_router_config"]
    # null threshold: left out, so the router keeps its own (infinity) rather than receiving None
    spec = parse_serving(_vllm(router="prefix_aware", prefix_router={"match_rate_threshold": 0.3}))
    kwargs = spec.deployment_config()["request_router_config"]["request_router_kwargs"]
    assert "imbalanced_threshold" not in kwargs and kwargs["match_rate_threshold"] == 0.3


@pytest.mark.parametrize("serving,needle", [
    ({"router": "default", "prefix_router": {"imbalanced_threshold": 4}}, "model.serving.prefix_router"),
    ({"router": "prefix_aware", "prefix_router": {"match_rate_threshold": 1.5}},
     "model.serving.prefix_router.match_rate_threshold"),
    ({"router": "prefix_aware", "prefix_router": {"imbalanced_threshold": -1}},
     "model.serving.prefix_router.imbalanced_threshold"),
    ({"router": "prefix_aware", "prefix_router": {"eviction_threshold_chars": 1000, "eviction_target_chars": 2000}},
     "eviction_target_chars: 2,000 exceeds eviction_threshold_chars 1,000"),
    ({"router": "prefix_aware", "prefix_router": {"threshold": 4}}, "model.serving.prefix_router.threshold"),
    ({"replica_cpus": -0.5}, "model.serving.replica_cpus"),
])
def test_bad_router_and_replica_settings_name_the_key(serving: dict, needle: str) -> None:
    with pytest.raises(ServingError, match=needle.replace(".", r"\.")):
        parse_serving(_vllm(**serving))


def test_replica_cpus_size_the_engine_replicas_actor() -> None:
    """Serve LLM puts the replica actor's CPUs (1 unless ray_actor_options says otherwise) into
    the first placement bundle: without replica_cpus two CPU replicas ask 2 x (1 + workers'
    CPUs) and never both fit on 2 cores."""
    spec = parse_serving(_vllm())
    assert "ray_actor_options" not in spec.deployment_config()
    spec = parse_serving(_vllm(replica_cpus=0.1))
    assert spec.deployment_config()["ray_actor_options"] == {"num_cpus": 0.1}
    with pytest.raises(ServingError, match="model.serving.replica_cpus"):
        parse_serving({"kind": "standin", "replica_cpus": 0.1})
