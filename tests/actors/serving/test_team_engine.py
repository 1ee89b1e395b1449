"""A mixed team through the real engine (vLLM's CPU build, the tiny model): one agent on the
engine, one on a second endpoint (the loopback chat server), the rest scripted. Preflight
checks both endpoints; the engine's own counters equal what the team's tiny member recorded
(its calls plus its preflight probe), and nothing else of the team reached the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from masgrid._private.platform.sweeps.preflight import preflight
from tests.support.chat_server import ChatServer, Reply

pytestmark = pytest.mark.slow


def test_a_team_of_the_engine_another_endpoint_and_scripted_agents(vllm_engine, tmp_path, ray_session):
    other = ChatServer(lambda body: Reply(text="[1]"), models=("other",))
    with other:
        presets = {
            "tiny_cpu": {"base_url": vllm_engine.base_url, "max_tokens": 24, "max_retries": 0,
                         "tokenizer": f"hf:{Path(vllm_engine.model_dir) / 'tokenizer.json'}"},
            "other": {"preset": "local_vllm", "name": "other", "base_url": other.base_url, "max_tokens": 24,
                      "max_retries": 0, "http_client": "direct"}}
        cfg = RunConfig.from_mapping({
            "task": "sorting", "protocol": "broadcast", "agents": 5, "k": 2, "max_rounds": 3, "seed": 2,
            "backend": "openai", "results_dir": str(tmp_path),
            "team": {"composition": {"tiny_cpu": 1, "other": 1, "rest": "scripted"}, "presets": presets}})
        before = vllm_engine.counters()
        preflight([cfg])
        (summary,) = run_many([cfg])
        after = vllm_engine.counters()
    assert summary.status == "ok", summary.error
    runs, agents, events = (pd.read_parquet(tmp_path / t) for t in ("runs", "agents", "events"))
    run = runs.iloc[0]
    assert run["team_composition"] == "3×scripted+1×other+1×tiny_cpu"
    probes = {p["model"]: p for p in map(json.loads, (tmp_path / "preflight.jsonl").read_text().splitlines())}
    assert set(probes) == {"tiny", "other"}  # every distinct endpoint of the team, checked once
    member = dict(zip(agents["agent"], agents["model_preset"]))
    assert sorted(member.values()) == ["other", "scripted", "scripted", "scripted", "tiny_cpu"]
    assert set(agents[agents["model_preset"] == "tiny_cpu"]["model"]) == {"tiny"}
    calls = events[events["kind"] == "model_call"].assign(member=lambda e: e["agent"].map(member))
    by_model = json.loads(run["team_by_model"])
    for name in ("tiny_cpu", "other", "scripted"):
        mine = calls[calls["member"] == name]
        assert by_model[name]["tokens_in"] == int(mine["tokens_in"].sum()) > 0
        assert by_model[name]["tokens_out"] == int(mine["tokens_out"].sum())
        assert by_model[name]["model_calls"] == len(mine)
    tiny = calls[calls["member"] == "tiny_cpu"]
    assert set(tiny["usage_source"]) == {"server"}
    # the engine counted exactly the tiny member's calls and its probe: the others never reached it
    assert after["prompt_tokens_total"] - before["prompt_tokens_total"] == (
        by_model["tiny_cpu"]["tokens_in"] + probes["tiny"]["prompt_tokens"])
    assert after["generation_tokens_total"] - before["generation_tokens_total"] == (
        by_model["tiny_cpu"]["tokens_out"] + probes["tiny"]["completion_tokens"])
    assert after["request_success_total"] - before["request_success_total"] == len(tiny) + 1
    assert len(other.requests) == by_model["other"]["model_calls"] + 1
