"""The terminal summary of one run says which phase its R, TE and CR cover."""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from masgrid._private.platform.config import RunConfig
from masgrid._private.platform.launch import run_local
from masgrid._private.platform.summary import print_summary


def _printed(tmp_path, condition: str) -> tuple[str, pd.Series]:
    cfg = RunConfig.from_mapping(dict(task="sorting", protocol="broadcast", agents=3, k=2, mode="desc",
                                      condition=condition, seed=2, results_dir=str(tmp_path / condition),
                                      execution={"executor": "local"}))
    summary = run_local(cfg)
    console = Console(record=True, width=200)
    print_summary(cfg, summary, console)
    return console.export_text(), pd.read_parquet(tmp_path / condition / "runs").iloc[0]


def test_two_phase_runs_show_the_scored_phase_beside_the_whole_run(tmp_path):
    text, run = _printed(tmp_path, "camoc")
    assert "rounds R (both phases)" in text and "token efficiency TE (both phases)" in text
    assert f"R {run['rounds_phase2']}, TE {run['te_phase2']:.2f}, CR {run['cr_phase2']:.3f}" in text
    assert f"{run['te']:.2f}" in text and run["te"] < run["te_phase2"]


def test_one_phase_runs_show_one_accounting(tmp_path):
    text, run = _printed(tmp_path, "base")
    assert "(both phases)" not in text and "phase 2" not in text
    assert f"{run['te']:.2f}" in text
