"""Serve LLM's per-node download task is skipped only where it has nothing to do
(serving/node_init.py): checked on a real placement group of the session's Ray, and on
every Serve LLM deployment of the suite, which go through the callback."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from masgrid._private.actors.serving.node_init import LocalModelInit, skippable
from masgrid._private.actors.serving.spec import LOCAL_MODEL_CALLBACK, parse_serving
from masgrid._private.platform.commands.serve_cli import compose_model


def test_only_a_local_directory_with_every_bundle_here_is_skipped(tmp_path):
    here, there = "a" * 56, "b" * 56
    assert skippable(str(tmp_path), {here}, here)
    assert not skippable(str(tmp_path), {here, there}, here)  # a bundle on another node: its files may differ
    assert not skippable(str(tmp_path), {there}, here)
    assert not skippable(str(tmp_path / "missing"), {here}, here)
    assert not skippable("Qwen/Qwen3-8B", {here}, here)  # a hub id: vLLM fetches it
    assert not skippable("s3://bucket/model", {here}, here)
    assert not skippable(None, {here}, here)
    assert not skippable(str(tmp_path), set(), here)


def test_a_model_found_here_names_the_callback_and_one_only_engine_nodes_have_does_not(tmp_path):
    local = parse_serving(compose_model(["model=tiny_cpu", f"model.serving.model_path={tmp_path}"]).serving)
    assert local.llm_config_dict("tiny")["callback_config"] == {"callback_class": LOCAL_MODEL_CALLBACK}
    elsewhere = parse_serving(compose_model(["model=tiny_cpu", f"model.serving.model_path={tmp_path / 'gpu-nodes-only'}"]
                                            ).serving)
    assert "callback_config" not in elsewhere.llm_config_dict("tiny")  # Serve LLM's own step
    from ray.llm._internal.common.utils.import_utils import load_class

    assert load_class(LOCAL_MODEL_CALLBACK) is LocalModelInit  # as Serve LLM loads it in the replica


@pytest.mark.parametrize("local", [True, False])
def test_the_callback_on_a_real_placement_group(local, tmp_path, ray_session):
    from ray.util.placement_group import placement_group, remove_placement_group

    pg = placement_group([{"CPU": 0.01}])
    try:
        ray_session.get(pg.ready(), timeout=60)
        source = str(tmp_path) if local else "Qwen/Qwen3-8B"
        config = SimpleNamespace(model_loading_config=SimpleNamespace(model_source=source))
        callback = LocalModelInit(llm_config=config, ctx_kwargs={"placement_group": pg})
        asyncio.run(callback.on_before_node_init())
        assert callback.ctx.run_init_node is (not local)
    finally:
        remove_placement_group(pg)
