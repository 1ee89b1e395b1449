"""model.cache against the real engine (vLLM's CPU build serving the tiny model): a run
executed again replays every call from the cache, and the engine's own request and token
counters show that nothing reached it; another seed gets no hit and pays for every call."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.analysis.load import read_table
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.actors.serving.test_real_engine_families import model_block

pytestmark = pytest.mark.slow


def execute(engine, results: Path, cache: Path, seed: int) -> tuple[pd.Series, pd.DataFrame, dict[str, float]]:
    cfg = RunConfig.from_mapping({
        "task": "sorting", "protocol": "broadcast", "agents": 3, "k": 2, "max_rounds": 4, "seed": seed,
        "backend": "openai", "model": model_block(engine, cache=True, cache_dir=str(cache)),
        "results_dir": str(results), "execution": {"executor": "local"}})
    before = engine.counters()
    summary = run_one(cfg)
    after = engine.counters()
    assert summary.status == "ok", summary.error
    calls = read_table(results, "events").query("kind == 'model_call'").sort_values(["phase", "round", "agent"])
    spent = {k: after[k] - before[k] for k in ("request_success_total", "prompt_tokens_total",
                                               "generation_tokens_total")}
    return read_table(results, "runs").iloc[-1], calls.reset_index(drop=True), spent


def test_a_repeated_run_replays_from_the_cache_and_the_engine_sees_nothing(vllm_engine, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first_run, first, paid = execute(vllm_engine, tmp_path / "a", cache, seed=2)
    assert len(first) == 3 * 4 and not first["from_cache"].any() and first_run["calls_from_cache"] == 0
    assert paid == {"request_success_total": 12, "prompt_tokens_total": first["tokens_in"].sum(),
                    "generation_tokens_total": first["tokens_out"].sum()}

    again_run, again, paid = execute(vllm_engine, tmp_path / "b", cache, seed=2)
    assert paid == {"request_success_total": 0, "prompt_tokens_total": 0, "generation_tokens_total": 0}
    assert again["from_cache"].all() and (again["attempts"] == 0).all()
    assert again["text"].tolist() == first["text"].tolist()
    assert again[["tokens_in", "tokens_out", "latency_s"]].equals(first[["tokens_in", "tokens_out", "latency_s"]])
    assert again_run["run_id"] == first_run["run_id"]
    assert again_run[["calls_from_cache", "tokens_in_from_cache", "tokens_out_from_cache"]].tolist() == [
        12, first["tokens_in"].sum(), first["tokens_out"].sum()]
    assert again_run[["tokens_in", "tokens_out", "model_calls", "success"]].tolist() == first_run[
        ["tokens_in", "tokens_out", "model_calls", "success"]].tolist()

    other_run, other, paid = execute(vllm_engine, tmp_path / "c", cache, seed=3)
    assert not other["from_cache"].any() and other_run["calls_from_cache"] == 0
    assert paid["request_success_total"] == len(other) == 12
