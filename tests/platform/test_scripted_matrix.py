"""Acceptance: the scripted backend solves every MAS-Bench task, protocol, input family and
condition at (N, K) in {(1,1), (3,5), (10,10), (20,10)} within R_max.

Runs go through the real driver, protocols, recorder and Parquet, in-process
(`executor=local`); tests/platform/sweeps/test_ray_runs.py covers the same path on Ray actors.
"""

import pandas as pd
import pytest

from masgrid.families.masbench.generator import MODES
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local

SIZES = [(1, 1), (3, 5), (10, 10), (20, 10)]


@pytest.mark.parametrize("task", ["sorting", "max", "prefix_sum"])
@pytest.mark.parametrize("protocol", ["broadcast", "p2p", "kv"])
@pytest.mark.parametrize("condition", ["base", "abl_message", "abl_submit", "camoc"])
def test_scripted_reaches_sr_one(tmp_path, task, protocol, condition):
    two_phase = condition in ("camoc", "abl_message")
    for mode in MODES:
        for n, k in SIZES:
            cfg = RunConfig.from_mapping(dict(task=task, protocol=protocol, agents=n, k=k, mode=mode,
                                              condition=condition, seed=n * 100 + k, results_dir=str(tmp_path),
                                              execution={"executor": "local"}))
            s = run_local(cfg)
            assert s.status == "ok", s.error
            assert s.success and s.sr == 1.0, (mode, n, k)
            assert s.rounds <= cfg.max_rounds * (2 if two_phase else 1)
    runs = pd.read_parquet(tmp_path / "runs")
    assert len(runs) == len(MODES) * len(SIZES)
    assert runs["success"].all() and runs["check"].all() and (runs["submitted"] == runs["agents"]).all()
    assert runs["rounds_phase2"].notna().all() == two_phase
    assert (runs["te"] > 0).all() and runs["cr"].between(0, 1).all()
