"""execution.prefix_cache=reset_per_run against the session's real vLLM engine (started with
VLLM_SERVER_DEV_MODE=1, tests/support/engine.py): a second, identical run starts on an empty
prefix cache (its first call reports 0 cached tokens, and the engine's own hit counter agrees
with the cached tokens the run recorded), where without the reset it finds the first run's
prompts cached. A server without the reset route is one line at preflight (loopback fake)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
from masgrid._private.platform.cluster.prefix_cache import reset_url


def config(base_url: str, results: Path, prefix_cache: str, backend: str = "openai") -> RunConfig:
    return RunConfig.from_mapping({
        "task": "sorting", "protocol": "kv", "agents": 2, "k": 3, "max_rounds": 2, "seed": 7, "backend": backend,
        "model": {"name": "tiny", "base_url": base_url, "max_tokens": 8, "max_retries": 0, "http_client": "lean"},
        "results_dir": str(results), "preflight": False, "execution": {"prefix_cache": prefix_cache}})


def calls(results: Path) -> pd.DataFrame:
    events = pd.read_parquet(results / "events")
    return events[events["kind"] == "model_call"].sort_values("seq")


@pytest.mark.slow
@pytest.mark.parametrize("prefix_cache", ["reset_per_run", "shared"])
def test_a_second_identical_run_on_a_reset_cache_finds_nothing_cached(vllm_engine, ray_session, tmp_path,
                                                                      prefix_cache):
    from masgrid._private.platform.sweeps.ray_runs import run_many

    first = config(vllm_engine.base_url, tmp_path / "first", "shared")
    (s1,) = run_many([first])
    assert s1.status != "failed", s1.error
    second = config(vllm_engine.base_url, tmp_path / "second", prefix_cache)
    assert second.run_id == first.run_id  # the setting is no part of the run's identity
    before = vllm_engine.counters()
    (s2,) = run_many([second])
    after = vllm_engine.counters()
    assert s2.status != "failed", s2.error
    mine = calls(tmp_path / "second")
    hits = after["prefix_cache_hits_total"] - before["prefix_cache_hits_total"]
    # the engine's own counter agrees with what the run recorded (nothing else calls it meanwhile)
    assert hits == mine["tokens_cached"].sum()
    first_call = int(mine["tokens_cached"].iloc[0])
    row = pd.read_parquet(tmp_path / "second" / "runs").iloc[0]
    if prefix_cache == "reset_per_run":
        assert first_call == 0
        assert bool(row["prefix_cache_reset"]) is True
    else:
        assert first_call > 0  # the first run's identical prompt is still cached
        assert bool(row["prefix_cache_reset"]) is False
    assert bool(pd.read_parquet(tmp_path / "first" / "runs").iloc[0]["prefix_cache_reset"]) is False


def test_scripted_runs_record_no_reset(tmp_path):
    cfg = RunConfig.from_mapping({"task": "sorting", "agents": 2, "results_dir": str(tmp_path)})
    assert cfg.columns()["prefix_cache_reset"] is None


def test_a_server_without_the_reset_route_is_one_line_at_preflight(tmp_path):
    from tests.support.chat_server import ChatServer, Reply

    def script(body: dict) -> Reply:  # the reset POST carries no body; vLLM without dev mode answers it 404
        return Reply(status=404) if not body else Reply(text="ok")

    with ChatServer(script, models=("tiny",)) as server:
        cfg = config(server.base_url, tmp_path, "reset_per_run")
        cfg = cfg.model_copy(update={"preflight": True})
        with pytest.raises(PreflightError) as err:
            preflight([cfg])
    text = str(err.value)
    assert "\n" not in text
    assert reset_url(server.base_url) in text and "HTTP 404" in text and "VLLM_SERVER_DEV_MODE=1" in text
    assert "execution.prefix_cache" in text


def test_the_real_engine_takes_the_reset_at_preflight(vllm_engine, tmp_path):
    cfg = config(vllm_engine.base_url, tmp_path, "reset_per_run").model_copy(update={"preflight": True})
    preflight([cfg])  # raises when the engine refuses
