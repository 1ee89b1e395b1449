"""The SILO report writes every table and a heatmap from a real (scripted) results directory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from masgrid.families.silo.report import write_report
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local


def test_report_from_real_runs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for over in ({"protocol": "p2p", "agents": 3}, {"protocol": "kv", "agents": 2},
                 {"protocol": "p2p", "agents": 1, "condition": "oracle-3"}):
        cfg = RunConfig.from_mapping({"task": "silo/I-06", "results_dir": str(results),
                                      "execution": {"executor": "local"}, **over})
        assert run_local(cfg).success
    written = {p.name for p in write_report(results, tmp_path / "report")}
    assert {"table1.csv", "table2.csv", "table15.csv", "table17.csv", "labels.csv"} <= written
    assert "heatmap-silo_I-06-p2p-3.png" in written and "heatmap-silo_I-06-kv-2.png" in written
    assert "3 of 3 runs used." in (tmp_path / "report" / "README.md").read_text()
    t2 = pd.read_csv(tmp_path / "report" / "table2.csv", header=[0, 1], index_col=0)
    assert t2.loc["k = 3", ("Level I", "RCC")] == 0.0
