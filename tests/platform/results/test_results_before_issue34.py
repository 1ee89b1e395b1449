"""A results directory written before issue 34's restructure (tests/data/before_issue34: made by
commit 11f4d52 with `masgrid.sweep`, scripted agents: sorting under base and camoc, one
AgentsNet coloring run) still works: its run ids are the ids today's code computes for the same
points, a resume runs nothing again, the columns that moved between the core and the families
(te, cr, rho, their per-phase forms, fallbacks, failed_parses) read back with their values, and
new runs append beside the old ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest

import masgrid

BEFORE = Path(__file__).resolve().parents[2] / "data" / "before_issue34"
MOVED = ["te", "cr", "rho", "te_phase1", "te_phase2", "cr_phase1", "cr_phase2", "fallbacks", "failed_parses"]
SORTING = ("task=sorting", "protocol=kv", "agents=3", "k=2", "execution.executor=local")
COLORING = ("task=agentsnet/coloring", "agents=4", "graph=ws", "execution.executor=local")


@pytest.fixture
def before(tmp_path: Path) -> Path:
    copy = tmp_path / "before"
    shutil.copytree(BEFORE, copy)
    return copy


def stored(results: Path) -> pd.DataFrame:
    """The runs rows as the files hold them (pyarrow, by column name), independent of masgrid's loader."""
    return ds.dataset(results / "runs", format="parquet", partitioning="hive").to_table().to_pandas().set_index("run_id")


def test_todays_code_computes_the_same_run_ids(before: Path) -> None:
    ids = {masgrid.compose(*SORTING, f"condition={c}", "seed=0", f"results_dir={before}")[0].run_id
           for c in ("base", "camoc")}
    ids.add(masgrid.compose(*COLORING, "seed=1", f"results_dir={before}")[0].run_id)
    assert ids == set(stored(before).index)


def test_a_resume_runs_nothing_and_the_moved_columns_keep_their_values(before: Path) -> None:
    old = stored(before)
    result = masgrid.sweep({"condition": ["base", "camoc"], "seed": [0]}, *SORTING, f"results_dir={before}")
    assert (result.ran, result.skipped_ok) == (0, 2)
    result = masgrid.sweep({"seed": [1]}, *COLORING, f"results_dir={before}")
    assert (result.ran, result.skipped_ok) == (0, 1)
    runs = masgrid.load_results(before).runs.set_index("run_id")
    assert set(runs.index) == set(old.index)
    pd.testing.assert_frame_equal(runs.loc[old.index, MOVED], old[MOVED], check_dtype=False)
    camoc = old[old["condition"] == "camoc"].iloc[0]
    assert camoc["te_phase2"] > 0 and camoc["rho"] is not None  # the old files really hold these values


def test_new_runs_append_beside_the_old_ones(before: Path) -> None:
    old = stored(before)
    result = masgrid.sweep({"seed": [2]}, *SORTING, "condition=camoc", f"results_dir={before}")
    assert result.ran == 1 and not result.failures
    runs = stored(before)
    assert len(runs) == len(old) + 1 and set(old.index) < set(runs.index)
    new = runs.drop(index=old.index).iloc[0]
    assert new["te"] > 0 and new["te_phase2"] > 0 and 0 <= new["cr"] <= 1 and new["rho"] is not None
    pd.testing.assert_frame_equal(runs.loc[old.index, MOVED], old[MOVED], check_dtype=False)
    assert len(masgrid.load_results(before).runs) == len(old) + 1
