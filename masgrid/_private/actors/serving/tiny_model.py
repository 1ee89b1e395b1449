"""A small chat model that any machine can serve with a real engine: `masgrid model tiny DIR`.

No weights can be downloaded here, yet the serving path (vLLM, Ray Serve LLM, tokenizer,
chat template, usage counters, prefix cache, tensor parallelism) must be exercised for real.
So the model is built locally, deterministically from a seed and from text that ships with
the project: a byte-level BPE tokenizer trained on masgrid's own prompt files and a few
fixed word lists, a ChatML chat template of our own (with tool calls in the hermes
layout, so vLLM's `hermes` tool parser reads them), a Qwen2-architecture config and random
weights in safetensors. Its replies are noise: what it proves is the plumbing, not the
coordination. Same seed and same shipped text give byte-identical files (tested).

Shape (defaults): 2 layers, hidden 128, 4 query heads and 2 KV heads of 32 dimensions (vLLM's CPU
attention kernels take no head size below 32), so
tensor parallelism 2 splits both evenly; about 0.4 M parameters, under 2 MB on disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from masgrid._private.resources import conf_dir, conf_files, conf_roots

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                  "<tool_response>", "</tool_response>"]
EOS = "<|im_end|>"

#: ChatML with tools, written for masgrid: tool schemas go into the system turn, a tool call
#: is a JSON object between <tool_call> tags (what vLLM's hermes parser reads), tool results
#: come back as user-side <tool_response> blocks.
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n"
    "{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "You may call these functions. Each call is one JSON object with \"name\" and \"arguments\", "
    "written between <tool_call> and </tool_call>.\n<tools>\n"
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools><|im_end|>\n"
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message.role == 'system' %}"
    "{% elif message.role == 'assistant' %}<|im_start|>assistant\n"
    "{% if message.content %}{{ message.content }}{% endif %}"
    "{% for call in message.tool_calls or [] %}"
    "{% set fn = call.function if call.function is defined else call %}"
    "\n<tool_call>\n{\"name\": \"{{ fn.name }}\", \"arguments\": "
    "{{ fn.arguments if fn.arguments is string else fn.arguments | tojson }}}\n</tool_call>"
    "{% endfor %}<|im_end|>\n"
    "{% elif message.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ message.content }}\n"
    "</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_WORDS = ("agent message send receive broadcast list sorted value values result submit round "
          "neighbour neighbours graph colour color leader matching vertex cover answer final "
          "question option true false file files read write key json tool call function patch "
          "test tests feature merge branch commit python def return import class self").split()


class TinySpec(BaseModel):
    """Shape of the tiny model; every field changes the files, so all are in the build hash."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    vocab_size: int = Field(4096, ge=512, le=65536, description="BPE target; the model pads to a multiple of 64")
    hidden_size: int = Field(128, ge=16)
    intermediate_size: int = Field(256, ge=16)
    num_hidden_layers: int = Field(2, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    num_key_value_heads: int = Field(2, ge=1)
    max_position_embeddings: int = Field(4096, ge=256)
    init_std: float = Field(0.5, gt=0, description="weight scale: large enough that replies vary")


def _shipped_roots() -> tuple[Path, ...]:
    """The core tree and the folders of the families masgrid ships: a family installed from
    elsewhere must not change the model that a seed builds."""
    package = Path(__file__).resolve().parents[3]
    return tuple(root for root in conf_roots() if root == conf_dir() or package in root.parents)


def corpus(seed: int) -> list[str]:
    """Training text: masgrid's prompt files (sorted), fixed word lists and numbers, shuffled
    with the seed. Only files the project ships, so the build needs nothing from outside."""
    texts: list[str] = []
    for _, path in conf_files("prompts", _shipped_roots()):
        if path.suffix in (".txt", ".yaml", ".md", ".j2"):
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    rng = random.Random(seed)
    texts += [" ".join(rng.choice(_WORDS) for _ in range(40)) for _ in range(200)]
    texts += [" ".join(str(rng.randrange(10_000)) for _ in range(40)) for _ in range(200)]
    texts += ['{"name": "x", "arguments": {"command": "ls"}} [1, 2, 3] {"key": "value"}'] * 20
    rng.shuffle(texts)
    return texts


def train_tokenizer(spec: TinySpec) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=spec.vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(spec.seed), trainer)
    return tok


def _weights(spec: TinySpec, vocab: int) -> dict[str, Any]:
    """Qwen2 tensor names and shapes, normal(0, init_std / sqrt(fan_in)) from the seed."""
    import numpy as np

    rng = np.random.default_rng(spec.seed)
    h, inter = spec.hidden_size, spec.intermediate_size
    head_dim = h // spec.num_attention_heads
    kv = spec.num_key_value_heads * head_dim

    def normal(*shape: int) -> Any:
        return (rng.standard_normal(shape) * spec.init_std / np.sqrt(shape[-1])).astype(np.float32)

    out: dict[str, Any] = {"model.embed_tokens.weight": normal(vocab, h)}
    for i in range(spec.num_hidden_layers):
        p = f"model.layers.{i}."
        out[p + "self_attn.q_proj.weight"] = normal(h, h)
        out[p + "self_attn.q_proj.bias"] = np.zeros(h, np.float32)
        out[p + "self_attn.k_proj.weight"] = normal(kv, h)
        out[p + "self_attn.k_proj.bias"] = np.zeros(kv, np.float32)
        out[p + "self_attn.v_proj.weight"] = normal(kv, h)
        out[p + "self_attn.v_proj.bias"] = np.zeros(kv, np.float32)
        out[p + "self_attn.o_proj.weight"] = normal(h, h)
        out[p + "mlp.gate_proj.weight"] = normal(inter, h)
        out[p + "mlp.up_proj.weight"] = normal(inter, h)
        out[p + "mlp.down_proj.weight"] = normal(h, inter)
        out[p + "input_layernorm.weight"] = np.ones(h, np.float32)
        out[p + "post_attention_layernorm.weight"] = np.ones(h, np.float32)
    out["model.norm.weight"] = np.ones(h, np.float32)
    return out


def build_tiny_model(directory: str | Path, spec: TinySpec | None = None) -> dict[str, Any]:
    """Write the model into `directory` (created; files there are replaced) and return a
    summary: parameters, vocabulary, bytes, and a digest of every file."""
    from safetensors.numpy import save_file

    spec = spec or TinySpec()
    if spec.hidden_size % spec.num_attention_heads:
        raise ValueError("hidden_size must be a multiple of num_attention_heads")
    if spec.num_attention_heads % spec.num_key_value_heads:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(spec)
    tok.save(str(out / "tokenizer.json"))
    ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
    vocab = -(-tok.get_vocab_size() // 64) * 64
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "torch_dtype": "float32",
        "vocab_size": vocab, "hidden_size": spec.hidden_size, "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.num_hidden_layers, "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads, "head_dim": spec.hidden_size // spec.num_attention_heads,
        "max_position_embeddings": spec.max_position_embeddings, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": True, "use_sliding_window": False, "attention_dropout": 0.0,
        "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids[EOS], "initializer_range": spec.init_std,
        "masgrid_tiny": spec.model_dump(),
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": spec.max_position_embeddings,
        "bos_token": None, "eos_token": EOS, "pad_token": "<|endoftext|>", "unk_token": None,
        "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {str(i): {"content": t, "special": True, "lstrip": False, "rstrip": False,
                                          "normalized": False, "single_word": False} for t, i in ids.items()},
    }
    _write_json(out / "config.json", config)
    _write_json(out / "tokenizer_config.json", tokenizer_config)
    _write_json(out / "special_tokens_map.json", {"eos_token": EOS, "pad_token": "<|endoftext|>"})
    _write_json(out / "generation_config.json", {"eos_token_id": ids[EOS], "bos_token_id": ids["<|endoftext|>"]})
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    tensors = _weights(spec, vocab)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    files = sorted(p for p in out.iterdir() if p.is_file())
    summary = {
        "directory": str(out.resolve()), "parameters": int(sum(t.size for t in tensors.values())),
        "vocab_size": vocab, "tokenizer_vocab": tok.get_vocab_size(), "bytes": sum(p.stat().st_size for p in files),
        "files": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in files},
    }
    log.info("tiny model written to %s (%d parameters)", out, summary["parameters"])
    return summary


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
