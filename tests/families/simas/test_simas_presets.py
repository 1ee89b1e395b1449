"""The SIMAS paper's four models have presets in the style of the other paper presets
(issue 25, item 6a): local weights, no sampling sent where the paper gives none, a record
of that, a feasible Serve layout, and the sweeps name them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from masgrid._private.actors.serving.spec import parse_serving
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.commands.serve_cli import compose_model

ROOT = Path(__file__).resolve().parents[3]
#: preset -> the checkpoint it serves (the paper names family and size only)
PAPER = {"simas_llama_3_1_8b": "meta-llama/Llama-3.1-8B-Instruct",
         "simas_llama_3_1_70b": "meta-llama/Llama-3.1-70B-Instruct",
         "simas_qwen2_5_7b": "Qwen/Qwen2.5-7B-Instruct",
         "simas_qwen2_5_72b": "Qwen/Qwen2.5-72B-Instruct"}


@pytest.mark.parametrize("stem", sorted(PAPER))
def test_preset_is_a_paper_preset_served_from_local_weights(stem: str) -> None:
    raw = yaml.safe_load((ROOT / "masgrid/families/simas/conf/model" / f"{stem}.yaml").read_text())
    assert raw["paper_sampling"]["papers"] == ["simas"] and raw["paper_sampling"]["model"] == PAPER[stem]
    settings = compose_model([f"model={stem}"])
    # the paper states no sampling: every parameter unknown, nothing sent
    for name in ("temperature", "top_p", "max_tokens"):
        assert getattr(settings.paper_sampling, name) == "unknown" and getattr(settings, name) is None
    spec = parse_serving(settings.serving)
    assert spec.kind == "vllm" and spec.model_path.startswith("/") and spec.model_path.endswith(PAPER[stem].split("/")[1])
    assert settings.tokenizer.endswith(f"{PAPER[stem].split('/')[1]}/tokenizer.json")
    assert spec.engine.max_model_len <= spec.architecture.max_position
    cfg = RunConfig.from_mapping({"task": "simas/mmlu", "protocol": "groupchat", "backend": "serve",
                                  "model": settings.model_dump(), "preflight": False,
                                  "simas": {"subject": "college_physics"}})
    assert cfg.columns()["sampling_vs_paper"] == "as paper where known (unknown: temperature, top_p, max_tokens)"


def test_sweeps_name_the_presets() -> None:
    text = (ROOT / "masgrid/families/simas/conf/sweep/simas.yaml").read_text()
    assert all(stem in text for stem in PAPER)
    assert "simas_llama_3_1_70b" in (ROOT / "masgrid/families/simas/conf/sweep/simas_ablation.yaml").read_text()
