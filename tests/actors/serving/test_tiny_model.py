"""`masgrid model tiny`: a seeded chat model in Hugging Face layout, built from shipped text."""

from __future__ import annotations

import json

import pytest

from masgrid._private.actors.serving.tiny_model import CHAT_TEMPLATE, TinySpec, build_tiny_model
from masgrid._private.platform.commands.cli import main


def test_same_seed_same_bytes_other_seed_other_weights(tmp_path):
    a = build_tiny_model(tmp_path / "a")
    b = build_tiny_model(tmp_path / "b")
    c = build_tiny_model(tmp_path / "c", TinySpec(seed=1))
    assert a["files"] == b["files"]
    assert a["files"]["model.safetensors"] != c["files"]["model.safetensors"]
    assert set(a["files"]) == {"config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                               "generation_config.json", "chat_template.jinja", "model.safetensors"}
    assert a["bytes"] < 4_000_000 and 500_000 < a["parameters"] < 2_000_000


def test_layout_loads_as_transformers_reads_it(tmp_path):
    """The tokenizer, its chat template and the weights as Hugging Face tools read them,
    checked against the shapes the config states (computed here from the config alone)."""
    transformers = pytest.importorskip("transformers")
    from safetensors.numpy import load_file

    build_tiny_model(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    messages = [{"role": "system", "content": "You are agent 1."}, {"role": "user", "content": "send 3 1 2"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>system\nYou are agent 1.<|im_end|>\n<|im_start|>user\nsend 3 1 2<|im_end|>\n"
                    "<|im_start|>assistant\n")
    assert tok.convert_tokens_to_ids("<|im_end|>") == config["eos_token_id"]
    weights = load_file(str(tmp_path / "model.safetensors"))
    h, heads, kv = config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = h // heads
    assert head_dim >= 32 and heads % 2 == 0 and kv % 2 == 0  # vLLM's CPU kernels; TP=2 splits both
    assert weights["model.embed_tokens.weight"].shape == (config["vocab_size"], h)
    assert weights["model.layers.0.self_attn.k_proj.weight"].shape == (kv * head_dim, h)
    assert len([k for k in weights if k.endswith("input_layernorm.weight")]) == config["num_hidden_layers"]
    assert config["vocab_size"] >= len(tok)


def test_tool_calls_render_in_the_layout_the_hermes_parser_reads(tmp_path):
    from jinja2 import Environment

    template = Environment().from_string(CHAT_TEMPLATE)
    text = template.render(messages=[
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"}],
        tools=[{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
        add_generation_prompt=True)
    assert '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>' in text
    assert "<tool_response>\na.py\n</tool_response>" in text and text.endswith("<|im_start|>assistant\n")


def test_cli_builds_and_reports_a_bad_directory_in_one_line(tmp_path, capsys):
    assert main(["model", "tiny", str(tmp_path / "m"), "--seed", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["directory"] == str((tmp_path / "m").resolve())
    (tmp_path / "file").write_text("x")
    assert main(["model", "tiny", str(tmp_path / "file" / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("masgrid model: ") and "\n" not in err
