"""A run on a ring through the real engine (vLLM's CPU build serving the tiny model).

The tiny model's replies are noise, so nothing is solved; what is checked is that a model
run on a restricted graph completes, that every agent's system prompt (the one the engine
received) names exactly its ring neighbours, and that the graph is recorded.
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


def test_sorting_on_a_ring_through_the_engine(vllm_engine, tmp_path, ray_session):
    n = 5
    cfg = RunConfig.from_mapping({
        "task": "sorting", "protocol": "p2p", "agents": n, "k": 2, "max_rounds": 2, "backend": "openai",
        "topology": {"kind": "ring"}, "results_dir": str(tmp_path),
        "model": {"name": "tiny", "served_name": "tiny", "base_url": vllm_engine.base_url, "max_tokens": 16,
                  "timeout_s": 120.0, "max_retries": 0, "http_client": "direct"}})
    preflight([cfg])
    (summary,) = run_many([cfg])
    assert summary.status == "ok"
    run = pd.read_parquet(Path(tmp_path) / "runs").iloc[-1]
    assert run["topology"] == "ring" and run["model_calls"] == n * 2 and run["model_errors"] == 0
    assert json.loads(run["topology_edges"]) == sorted([min(i, (i + 1) % n), max(i, (i + 1) % n)] for i in range(n))
    assert run["topology_diameter"] == 2 and run["topology_mean_degree"] == 2.0
    agents = pd.read_parquet(Path(tmp_path) / "agents").set_index("agent")
    for i in range(n):
        left, right = sorted({(i - 1) % n, (i + 1) % n})
        assert agents.loc[i, "degree"] == 2
        assert f"you are linked to 2 of the {n - 1} other agents: Agent-{left}, Agent-{right}." in \
            agents.loc[i, "system_prompt"]
    events = pd.read_parquet(Path(tmp_path) / "events", columns=["agent", "kind", "verb", "peers"])
    for _, row in events[(events["kind"] == "command") & (events["verb"] == "send_message")].iterrows():
        assert set(row["peers"]) <= {(row["agent"] - 1) % n, (row["agent"] + 1) % n}
