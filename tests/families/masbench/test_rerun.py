"""The rerun-change table (families/masbench/rerun.py) against the plan the loopback model followed.

Each agent of each two-phase run was told what to submit in phase 1 and in phase 2 (right,
one of two wrong blocks, or nothing); the expected counts of fixed, broken and kept
answers are tallied here from that plan alone.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.analysis import load_results
from masgrid._private.analysis.report import build_report
from masgrid.families.masbench.rerun import OUTCOMES, rerun_changes
from tests.support.two_phase import Plan, run_grid

PROTOCOLS = ("broadcast", "p2p", "kv")


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Plan]]:
    root = tmp_path_factory.mktemp("rerun")
    return root, run_grid(root, ("base", "abl_message", "camoc"), PROTOCOLS, repeats=3, seed=5)


def _expected(plans: dict[str, Plan]) -> dict[tuple[str, str], Counter]:
    out: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for plan in plans.values():
        if plan.phases == 1:
            continue
        tally = out[plan.condition, plan.protocol]
        tally["runs"] += 1
        for i in range(plan.n):
            before, after = plan.correct(i, 1), plan.correct(i, 2)
            name = {(True, True): "kept_correct", (False, True): "fixed", (True, False): "broken",
                    (False, False): "kept_wrong"}[before, after]
            tally[name] += 1
            tally["agents"] += 1
            first, final = plan.answer(i, 1), plan.answer(i, 2)
            tally["same_answer"] += first is not None and first == final
        ok_1 = all(plan.correct(i, 1) for i in range(plan.n))
        ok_2 = all(plan.correct(i, 2) for i in range(plan.n))
        tally["runs_fixed"] += not ok_1 and ok_2
        tally["runs_broken"] += ok_1 and not ok_2
        tally["sr1"] += plan.sr(1)
        tally["sr2"] += plan.sr(2)
    return out


def test_counts_match_the_plan(grid):
    root, plans = grid
    loaded = load_results(root)
    table = rerun_changes(loaded.runs, loaded.agents)
    expected = _expected(plans)
    assert set(table.index.get_level_values("condition")) == {"abl_message", "camoc"}  # base has no rerun
    totals: Counter = Counter()
    for (condition, protocol), tally in expected.items():
        row = table.loc[("scripted-loopback", condition, protocol)]
        for name in (*OUTCOMES, "runs", "agents", "same_answer", "runs_fixed", "runs_broken"):
            assert row[name] == tally[name], (condition, protocol, name)
        assert row["unscored"] == 0
        assert row["SR%_phase1"] == pytest.approx(100 * tally["sr1"] / tally["runs"])
        assert row["SR%_phase2"] == pytest.approx(100 * tally["sr2"] / tally["runs"])
        assert sum(row[name] for name in OUTCOMES) == row["agents"]
        totals.update(tally)
    # the plan exercised every outcome, so none of the columns is vacuous
    assert all(totals[name] > 0 for name in (*OUTCOMES, "same_answer", "runs_fixed"))


def test_runs_recorded_without_phase1_verdicts_are_counted_unscored(grid):
    root, plans = grid
    loaded = load_results(root)
    table = rerun_changes(loaded.runs, loaded.agents.drop(columns=["correct_phase1"]))
    assert (table[list(OUTCOMES)] == 0).all().all()
    assert table["unscored"].sum() == sum(p.n for p in plans.values() if p.phases == 2)


def test_report_writes_the_table_only_when_there_are_reruns(grid, tmp_path):
    root, _ = grid
    build_report(root, tmp_path / "all")
    md = (tmp_path / "all" / "masbench" / "rerun_changes.md").read_text()
    assert "fixed" in md and "broken" in md
    csv = pd.read_csv(tmp_path / "all" / "masbench" / "rerun_changes.csv")
    loaded = load_results(root)
    table = rerun_changes(loaded.runs, loaded.agents).reset_index()
    assert csv["fixed"].tolist() == table["fixed"].tolist()
    # a results directory with one-phase runs only: no rerun table, no empty file
    base_only = tmp_path / "base_only"
    for name in ("runs", "agents", "events"):
        frame = pd.read_parquet(root / name)
        keep = frame["run_id"].isin(loaded.runs.loc[loaded.runs["condition"] == "base", "run_id"])
        for (task, protocol), part in frame[keep].groupby(["task", "protocol"], observed=True):
            folder = base_only / name / f"task={task}" / f"protocol={protocol}"
            folder.mkdir(parents=True)
            part.drop(columns=["task", "protocol"]).to_parquet(folder / "part-0.parquet")
    build_report(base_only, tmp_path / "base")
    assert not (tmp_path / "base" / "masbench" / "rerun_changes.md").exists()
    assert "(rerun_changes.md)" not in (tmp_path / "base" / "masbench" / "README.md").read_text()
