"""Model presets carry explicit sampling; paper presets send what the paper's runs used where
that is known, and docs/models.md lists the same record (issue 14, item 8)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml

from masgrid._private.actors.backends.sampling import PARAMETERS, PaperSampling
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.commands.serve_cli import compose_model
from masgrid._private.resources import conf_file, conf_files

ROOT = Path(__file__).resolve().parents[3]
PRESETS = [path for rel, path in conf_files("model") if rel.endswith(".yaml")]  # core and every family's
PAPER_PRESETS = [p.stem for p in PRESETS if "paper_sampling" in yaml.safe_load(p.read_text())]


def raw(stem: str) -> dict:
    return yaml.safe_load(conf_file(f"model/{stem}.yaml").read_text())


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_every_model_preset_states_its_sampling_explicitly(path):
    data = yaml.safe_load(path.read_text())
    if data["name"] == "scripted":
        return  # no model, nothing is sampled
    assert {"temperature", "top_p", "max_tokens"} <= data.keys()
    if data.get("base_url") or data.get("serving", {}).get("kind") == "vllm":  # a real model: its tokenizer too
        assert "tokenizer" in data


def test_the_paper_models_have_presets():
    models = {raw(s)["paper_sampling"]["model"] for s in PAPER_PRESETS}
    assert {"deepseek-ai/DeepSeek-V3.1", "Qwen/Qwen3-Next-80B-A3B-Instruct", "openai/gpt-oss-120b"} <= models
    agentsnet = {raw(s)["paper_sampling"]["model"] for s in PAPER_PRESETS if "agentsnet" in raw(s)["paper_sampling"]["papers"]}
    assert len(agentsnet) == 9  # Table 3: ten rows, Gemini 2.5 Flash with and without thinking share a model id
    assert len([s for s in PAPER_PRESETS if s.startswith("agentsnet_")]) == 10


@pytest.mark.parametrize("stem", PAPER_PRESETS)
def test_paper_preset_sends_the_papers_values_where_known(stem):
    settings = compose_model([f"model={stem}"])
    record = settings.paper_sampling
    assert record is not None and record.deviations(settings.model_dump()) == []
    for name in PARAMETERS:  # written out again: a number is sent as is; not sent / unknown send nothing
        paper, sent = getattr(record, name), getattr(settings, name)
        assert sent == (paper if isinstance(paper, (int, float)) else None)
    # and the run records the values as sent
    cfg = RunConfig.from_mapping({"backend": "openai" if settings.base_url else "scripted",
                                  "model": settings.model_dump(), "preflight": False})
    row = cfg.columns()
    assert (row["temperature"], row["top_p"], row["max_tokens"]) == (settings.temperature, settings.top_p,
                                                                      settings.max_tokens)


def documented_rows() -> dict[str, tuple[str, str, str, str]]:
    rows = {}
    for line in (ROOT / "docs" / "models.md").read_text().splitlines():
        m = re.match(r"\| `(\w+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", line)
        if m:
            rows[m.group(1)] = tuple(v.strip() for v in m.groups()[1:])
    return rows


def test_docs_list_every_paper_preset_with_its_record():
    rows = documented_rows()
    assert set(rows) == set(PAPER_PRESETS)
    for stem in PAPER_PRESETS:
        record = raw(stem)["paper_sampling"]
        assert rows[stem] == (record["model"], *(str(record[name]) for name in PARAMETERS))


def test_no_doc_or_preset_calls_the_server_default_as_in_the_papers():
    texts = [p.read_text() for p in PRESETS] + [p.read_text() for p in (ROOT / "docs").rglob("*.md")]
    texts.append((ROOT / "README.md").read_text())
    for text in texts:
        for line in text.splitlines():
            if "null" in line or "temperature" in line or "sampling" in line:
                assert not re.search(r"as in the papers?\b|as in MAS-Bench", line), line


def test_deviations_on_random_records():
    rng = random.Random(3)
    choices = [0.0, 0.7, 1.0, 1024, 256, "not sent", "unknown"]
    for _ in range(500):
        paper = {name: rng.choice(choices) for name in PARAMETERS}
        if isinstance(paper["max_tokens"], float):
            paper["max_tokens"] = "unknown"
        if isinstance(paper["top_p"], int) and not isinstance(paper["top_p"], bool) and paper["top_p"] > 1:
            paper["top_p"] = "not sent"
        sent = {name: rng.choice([None, 0.0, 0.7, 1.0, 1024, 256]) for name in PARAMETERS}
        record = PaperSampling(papers=["p"], model="m", client="c", **paper)
        expected = []
        for name in PARAMETERS:
            if paper[name] == "unknown":
                continue
            want = None if paper[name] == "not sent" else paper[name]
            if sent[name] != want:
                expected.append(name)
        assert [d.split(":")[0] for d in record.deviations(sent)] == expected
        assert record.unknown() == [n for n in PARAMETERS if paper[n] == "unknown"]


def test_runs_row_compares_the_sent_sampling_with_the_papers():
    gemini = compose_model(["model=agentsnet_gemini_2_0_flash"]).model_dump()
    row = RunConfig.from_mapping({"backend": "openai", "model": gemini, "preflight": False}).columns()
    assert row["sampling_vs_paper"] == "as paper"
    changed = RunConfig.from_mapping({"backend": "openai", "model": {**gemini, "temperature": 0.2},
                                      "preflight": False}).columns()
    assert changed["sampling_vs_paper"] == "differs: temperature: paper 0.7, sent 0.2"
    llama = compose_model(["model=agentsnet_llama_4_scout"]).model_dump()
    row = RunConfig.from_mapping({"backend": "openai", "model": llama, "preflight": False}).columns()
    assert row["sampling_vs_paper"] == "as paper where known (unknown: temperature)"
    assert RunConfig.from_mapping({}).columns()["sampling_vs_paper"] is None
