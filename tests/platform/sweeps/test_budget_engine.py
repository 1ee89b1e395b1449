"""A token budget over runs against vLLM's CPU build serving the tiny model: the spend is the
engine's own usage counts, and which runs start is replayed here from them by the rule."""

from __future__ import annotations

import pandas as pd
import pytest

import masgrid
from tests.platform.sweeps.test_adaptive_engine import config
from tests.platform.sweeps.test_budget import replay

pytestmark = pytest.mark.slow


def test_token_budget_through_a_real_engine(vllm_engine, tmp_path, ray_session):
    probe = masgrid.sweep([config(vllm_engine, tmp_path / "probe", 2)], max_concurrent=1)
    assert probe.ok + probe.degraded == 1
    ref = pd.read_parquet(tmp_path / "probe" / "runs").iloc[0]
    budget = int(2.5 * (ref["tokens_in"] + ref["tokens_out"]))  # about two runs of agents=2
    order = [(agents, seed) for agents in (2, 3) for seed in (0, 1)]
    cfgs = [config(vllm_engine, tmp_path / "out", agents, seed) for agents, seed in order]
    result = masgrid.sweep(cfgs, max_concurrent=1, budget={"tokens": budget})
    runs = pd.read_parquet(tmp_path / "out" / "runs")
    assert set(runs["status"]) <= {"ok", "degraded"} and (runs["model_calls"] > 0).all()
    assert (runs["calls_usage_estimated"] == 0).all()  # every count is the engine's usage
    spend = {(int(r.agents), int(r.seed)): float(r.tokens_in + r.tokens_out) for r in runs.itertuples()}
    want = replay(order, spend, budget)
    assert set(spend) == set(want) and 0 < len(want) < len(order)
    assert result.not_started == len(order) - len(want) and result.budget is not None
    assert result.budget.startswith(f"budget: {len(order) - len(want)} of 4 runs not started")

    rest = masgrid.sweep(cfgs, max_concurrent=1, budget={"tokens": 10**9})
    assert rest.ran == len(order) - len(want) and rest.not_started == 0
    assert len(pd.read_parquet(tmp_path / "out" / "runs")) == len(order)
