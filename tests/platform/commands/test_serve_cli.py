"""`masgrid serve`: dry runs print the resolved deployment; bad presets fail before Ray."""

from __future__ import annotations

import json

import pytest

from masgrid._private.platform.commands.cli import main


def test_dry_run_prints_deployment_and_placement(capsys) -> None:
    assert main(["serve", "--dry-run", "model=deepseek_v31", "model.serving.layout=tp4pp4"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["llm_config"]["engine_kwargs"]["pipeline_parallel_size"] == 4
    assert plan["serve"]["handle_target"] == "deepseek-v31/LLMServer:DeepSeek-V3_1"
    assert len(plan["placement"]["workers"]) == 16


@pytest.mark.parametrize("args,needle", [
    (["--dry-run", "model=gpt_oss_120b", "model.serving.layout=tp3"], "layout: 'tp3' is not one of"),
    (["--dry-run", "--check-paths", "model=gpt_oss_120b", "model.serving.model_path=/nonexistent/gpt"], "no model at"),
    (["--dry-run", "model=no_such_model"], "no_such_model"),
    (["model=gpt_oss_120b"], "pip install 'masgrid[vllm]'"),  # deploying without vLLM: before Ray
])
def test_errors_are_one_clear_message(capsys, request, args: list[str], needle: str) -> None:
    if "--dry-run" not in args:  # deploying: as on a machine without vLLM (the suite's has the CPU build)
        request.getfixturevalue("without_vllm")
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_run_config_rejects_bad_serving_block() -> None:
    from masgrid._private.platform.run.config import ConfigError, RunConfig

    with pytest.raises(ConfigError, match="model.serving.route"):
        RunConfig.from_mapping({"backend": "serve", "model": {"name": "x", "serving": {"route": "carrier-pigeon"}}})


def test_run_on_a_vllm_preset_without_vllm_is_one_line(ray_session, without_vllm, capsys, tmp_path) -> None:
    # a preset this cluster has room for (otherwise the capacity check refuses first), under an
    # app name no earlier test deployed (a running app of the preset would be used as it is)
    rc = main(["run", "backend=serve", "model=tiny_cpu", "model.serving.app=tiny-without-vllm",
               f"results_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "masgrid run: model.serving.kind=vllm needs vLLM" in err and "Traceback" not in err
