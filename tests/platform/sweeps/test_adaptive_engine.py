"""An adaptive sweep through a model endpoint: vLLM's CPU build serving the tiny model.

The tiny model's replies are noise, so no run succeeds: the Wilson interval of success over
0 of n never gets within 0.5 (0.66 wide at n=2, 0.56 at n=3) and each cell must stop at
max_seeds=3, with the runs of seeds 0, 1, 2 as its own configs compute them.
"""

from __future__ import annotations

import pandas as pd
import pytest

import masgrid
from masgrid._private.analysis.cells import read_cells
from masgrid._private.platform.run.config import RunConfig
from tests.platform.sweeps.test_adaptive import ref_width, ref_wilson

pytestmark = pytest.mark.slow


def config(engine, results_dir, agents: int, seed: int = 0) -> RunConfig:
    return RunConfig.from_mapping({
        "task": "sorting", "protocol": "broadcast", "agents": agents, "k": 2, "max_rounds": 2, "seed": seed,
        "backend": "openai", "results_dir": str(results_dir),
        "model": {"name": "tiny", "served_name": "tiny", "base_url": engine.base_url, "max_tokens": 16,
                  "timeout_s": 120.0, "max_retries": 0}})


def test_adaptive_sweep_through_a_real_engine(vllm_engine, tmp_path, ray_session):
    adaptive = {"width": 0.5, "min_seeds": 2, "batch": 1, "max_seeds": 3}
    result = masgrid.sweep([config(vllm_engine, tmp_path, n) for n in (2, 3)], adaptive=adaptive)
    runs = pd.read_parquet(tmp_path / "runs").set_index("run_id")
    assert result.ran == len(runs) == 6 and set(runs["status"]) <= {"ok", "degraded"}
    assert set(runs["model"]) == {"tiny"} and (runs["model_calls"] > 0).all()
    cells = read_cells(tmp_path).sort_values("cell")
    assert list(cells["cell"]) == ["agents=2", "agents=3"]
    s = {"min_seeds": 2, "batch": 1, "max_seeds": 3, "max_failed": 5, "confidence": 0.95, "width": 0.5}
    for row, agents in zip(cells.itertuples(), (2, 3)):
        ids = [config(vllm_engine, tmp_path, agents, seed).run_id for seed in range(3)]
        assert list(row.run_ids) == ids
        stream = [float(v) for v in runs.loc[ids, "success"]]
        assert (row.n_seeds, row.reason) == ref_width(stream, s, True) == (3, "max_seeds")
        assert (row.ci_low, row.ci_high) == pytest.approx(ref_wilson(int(sum(stream)), 3, 0.95))
