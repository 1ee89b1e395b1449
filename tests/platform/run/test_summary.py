"""The terminal summary of one run: the core numbers, then the family's own columns with their
units, and for a two-phase run which phase each number covers."""

from __future__ import annotations

import pandas as pd
import pytest
from rich.console import Console

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.run.summary import print_summary


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
    assert "rounds R (both phases)" in text and "te (both phases)" in text
    assert f"rounds {run['rounds_phase2']}, te {run['te_phase2']:.4g}, cr {run['cr_phase2']:.4g}" in text
    assert f"{run['te']:.4g} (elements per 10^5 tokens)" in text and run["te"] < run["te_phase2"]
    assert f"rho {run['rho']:.4g}" not in text and f"{run['rho']:.4g} (fraction in [0, 1])" in text


def test_one_phase_runs_show_one_accounting(tmp_path):
    text, run = _printed(tmp_path, "base")
    assert "(both phases)" not in text and "phase 2" not in text
    assert f"{run['te']:.4g} (elements per 10^5 tokens)" in text


def test_the_summary_carries_the_familys_columns_and_headline(tmp_path):
    """RunSummary names no family's metric: what a run's family declares is in `metrics`, its
    headline in `headline`/`headline_value`, a two-phase run's scored phase in `phase2`."""
    from masgrid.family import family_of

    cfg = RunConfig.from_mapping(dict(task="sorting", protocol="broadcast", agents=3, k=2, mode="desc",
                                      condition="camoc", seed=2, results_dir=str(tmp_path),
                                      execution={"executor": "local"}))
    summary = run_local(cfg)
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    declared = family_of("sorting").metrics
    assert set(summary.metrics) == {n for n in declared if not n.endswith(("_phase1", "_phase2"))
                                    and pd.notna(run[n])} == {"te", "cr", "rho"}
    assert all(summary.metrics[n] == pytest.approx(run[n]) for n in summary.metrics)
    assert (summary.headline, summary.headline_value) == ("sr", pytest.approx(run["sr"]))
    assert summary.phase2["rounds"] == run["rounds_phase2"] and summary.phase2["te"] == pytest.approx(run["te_phase2"])
