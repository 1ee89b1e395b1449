"""Which phase the MAS-Bench tables report (families/masbench/phases.py), against hand computation.

The results come from real two-phase and one-phase runs against a loopback model scripted
per agent and phase (tests/support/two_phase.py). Expected cells are computed here in plain
Python from the plan (R, SR), the server's own word counts (tokens, TE) and the events'
communication tokens (CR): never from the columns under test.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.analysis import load_results
from masgrid.families.masbench.tables import table1
from masgrid.families.masbench.tables import table6, table7
from masgrid.families.masbench.phases import by_phase, missing_phase_columns, phase_table
from masgrid.families.masbench.cost import table4
from masgrid._private.analysis.report import build_report
from tests.support.two_phase import Plan, run_grid

CONDITIONS = ("base", "abl_message", "abl_submit", "camoc")
PROTOCOLS = ("broadcast", "kv")


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Plan], pd.DataFrame]:
    root = tmp_path_factory.mktemp("phases")
    plans = run_grid(root, CONDITIONS, PROTOCOLS, repeats=2, seed=41)
    return root, plans, pd.read_parquet(root / "events")


def _comm(events: pd.DataFrame, run_id: str, phase: int | None) -> int:
    return sum(int(r.tokens_comm) for r in events.itertuples() if r.run_id == run_id and phase in (None, r.phase))


def _cells(plans: dict[str, Plan], events: pd.DataFrame, accounting: str) -> dict[tuple, dict[str, float]]:
    """Table 1 cells by hand: the mean over a cell's runs of R, TE, CR% and SR% of one accounting."""
    values: dict[tuple, list[dict[str, float]]] = defaultdict(list)
    for run_id, plan in plans.items():
        phase = {"final": plan.phases, "run": None, "phase1": 1}[accounting]
        tokens = plan.tokens(phase)
        values[plan.condition, plan.protocol].append({
            "R": plan.rounds(phase), "TE": plan.n * plan.k / tokens * 1e5,
            "CR%": 100 * _comm(events, run_id, phase) / tokens, "SR%": 100 * plan.sr(phase or plan.phases)})
    return {key: {m: sum(v[m] for v in rows) / len(rows) for m in rows[0]} for key, rows in values.items()}


@pytest.mark.parametrize("accounting", ["final", "run", "phase1"])
def test_table1_reports_the_accounting_asked_for(grid, accounting):
    root, plans, events = grid
    runs = load_results(root).runs
    t1 = table1(runs, accounting=accounting)
    for (condition, protocol), cell in _cells(plans, events, accounting).items():
        for metric, value in cell.items():
            assert t1.loc[("scripted-loopback", condition), (protocol, metric)] == pytest.approx(value), \
                (condition, protocol, metric)


def test_the_default_is_the_scored_phase_and_differs_from_the_whole_run(grid):
    root, plans, _ = grid
    runs = load_results(root).runs
    default, final, whole = table1(runs), table1(runs, accounting="final"), table1(runs, accounting="run")
    pd.testing.assert_frame_equal(default, final)
    for condition in ("base", "abl_submit"):  # one phase: every accounting agrees
        pd.testing.assert_series_equal(final.loc[("scripted-loopback", condition)],
                                       whole.loc[("scripted-loopback", condition)])
    for condition in ("abl_message", "camoc"):  # both phases summed: more rounds, lower TE
        for protocol in PROTOCOLS:
            assert whole.loc[("scripted-loopback", condition), (protocol, "R")] > \
                final.loc[("scripted-loopback", condition), (protocol, "R")]
            assert whole.loc[("scripted-loopback", condition), (protocol, "TE")] < \
                final.loc[("scripted-loopback", condition), (protocol, "TE")]


def test_phase2_accounting_leaves_one_phase_runs_out(grid):
    root, plans, _ = grid
    view = by_phase(load_results(root).runs, "phase2").set_index("run_id")
    for run_id, plan in plans.items():
        if plan.phases == 1:
            assert pd.isna(view.loc[run_id, "rounds"]) and pd.isna(view.loc[run_id, "te"])
        else:
            assert view.loc[run_id, "rounds"] == plan.rounds(2)
            assert view.loc[run_id, "tokens_total"] == plan.tokens(2)
    assert set(view["accounting"]) == {"phase2"}


def test_two_phase_runs_without_phase_columns_are_blank_not_summed(grid):
    """Results recorded before the per-phase columns: one-phase runs keep their values, two-phase
    runs are left out of TE, CR and tokens (never entered with both phases added up)."""
    root, plans, _ = grid
    runs = load_results(root).runs
    kept = ("rounds_phase1", "rounds_phase2")  # recorded before as well
    old = runs.drop(columns=[c for c in runs.columns if c.endswith(("_phase1", "_phase2")) and c not in kept])
    assert missing_phase_columns(old) == sum(p.phases == 2 for p in plans.values())
    assert missing_phase_columns(runs) == 0
    view = by_phase(old, "final").set_index("run_id")
    for run_id, plan in plans.items():
        if plan.phases == 1:
            assert view.loc[run_id, "rounds"] == plan.rounds(None)
            assert view.loc[run_id, "tokens_total"] == plan.tokens(None)
        else:  # rounds_phase2 was recorded then too; the tokens of phase 2 were not
            assert view.loc[run_id, "rounds"] == plan.rounds(2)
            for name in ("te", "cr", "tokens_total", "tokens_comm"):
                assert pd.isna(view.loc[run_id, name]), name
        # the score of the final submissions is known for every run
        assert view.loc[run_id, "sr"] == pytest.approx(plan.sr(plan.phases))
        assert bool(view.loc[run_id, "success"]) == (plan.sr(plan.phases) == 1)


def test_unknown_accounting_is_refused(grid):
    root, _, _ = grid
    with pytest.raises(ValueError, match="accounting: 'both' is not one of final, run, phase1, phase2"):
        by_phase(load_results(root).runs, "both")


def test_phase_table_shows_both_phases_and_the_run(grid):
    root, plans, _ = grid
    table = phase_table(load_results(root).runs)
    assert set(table.index.get_level_values("condition")) == {"abl_message", "camoc"}
    for (condition, protocol), group in _by_cell(plans).items():
        row = table.loc[("scripted-loopback", condition, protocol)]
        for label, phase in (("phase 1", 1), ("phase 2 (final)", 2), ("whole run", None)):
            assert row[(label, "R")] == pytest.approx(sum(p.rounds(phase) for p in group) / len(group))
            tokens = [p.tokens(phase) for p in group]
            assert row[(label, "tokens")] == pytest.approx(sum(tokens) / len(group))
            mean = sum(tokens) / len(tokens)
            sd = math.sqrt(sum((t - mean) ** 2 for t in tokens) / (len(tokens) - 1))
            assert row[(label, "tokens sd")] == pytest.approx(sd) and row[(label, "tokens n")] == len(group)
            rounds = [p.rounds(phase) for p in group]
            assert row[(label, "R sd")] == pytest.approx(statistics.stdev(rounds))
        assert row[("all phases", "runs")] == len(group)


def test_report_says_which_phase_it_reports(grid, tmp_path):
    root, _, _ = grid
    build_report(root, tmp_path)
    index = (tmp_path / "masbench" / "README.md").read_text()
    assert "report R, TE, CR and tokens of the scored phase (phase 2)" in index
    assert "(phases.md)" in index and "(rerun_changes.md)" in index
    phases_md = (tmp_path / "masbench" / "phases.md").read_text()
    assert "phase 1" in phases_md and "whole run" in phases_md
    assert "scored phase (phase 2)" in (tmp_path / "masbench" / "table1.md").read_text()  # every table says it


def test_table4_counts_both_phases_of_two_phase_runs(grid, tmp_path):
    """Table 4 is what was spent: every phase's tokens (from the plan and the events), each run once;
    its report note says so instead of the phase-2 accounting of the other tables."""
    root, plans, events = grid
    row = table4(load_results(root).runs).loc["scripted-loopback"]
    assert row["runs"] == len(plans)
    assert row["total_mtok"] * 1e6 == pytest.approx(sum(p.tokens(None) for p in plans.values()))
    assert row["comm_mtok"] * 1e6 == pytest.approx(sum(_comm(events, r, None) for r in plans))
    assert sum(p.tokens(None) for p in plans.values()) > sum(p.tokens(p.phases) for p in plans.values())
    build_report(root, tmp_path)
    note = (tmp_path / "masbench" / "table4.md").read_text()
    assert "both phases of a two-phase run" in note and "scored phase (phase 2)" not in note


@pytest.mark.parametrize("accounting", ["final", "run"])
def test_tables_6_and_7_take_the_accounting_asked_for(grid, accounting):
    """CAMOC's tokens per run (Table 6) and per correct instance (Table 7) from the plans:
    phase 2 alone by default, both phases (the spend) with accounting="run"."""
    root, plans, _ = grid
    runs = load_results(root).runs
    t6, t7 = table6(runs, accounting=accounting), table7(runs, accounting=accounting)
    phase = (lambda p: p.phases) if accounting == "final" else (lambda p: None)
    for protocol in PROTOCOLS:
        camoc = [p for p in plans.values() if p.condition == "camoc" and p.protocol == protocol]
        spent = [p.tokens(phase(p)) for p in camoc]
        assert t6.loc[("scripted-loopback", protocol), "camoc_tokens"] == pytest.approx(sum(spent) / len(spent))
        if protocol == "kv":
            solved = sum(p.sr(p.phases) == 1 for p in camoc)
            expected = sum(spent) / solved if solved else float("nan")
            assert t7.loc["scripted-loopback", "camoc"] == pytest.approx(expected, nan_ok=True)


def _by_cell(plans: dict[str, Plan]) -> dict[tuple[str, str], list[Plan]]:
    out: dict[tuple[str, str], list[Plan]] = defaultdict(list)
    for plan in plans.values():
        if plan.phases == 2:
            out[plan.condition, plan.protocol].append(plan)
    return out


def test_report_flags_two_phase_runs_recorded_without_phase_tokens(grid, tmp_path):
    """Older results (no per-phase token columns): the report says how many two-phase runs lost
    their TE, CR and tokens, and Table 1 leaves those cells blank instead of summing phases."""
    root, plans, _ = grid
    old = tmp_path / "old"
    for name in ("runs", "agents", "events"):
        for file in (root / name).rglob("part-*.parquet"):
            frame = pd.read_parquet(file)
            if name == "runs":
                frame = frame.drop(columns=[c for c in frame.columns if c.endswith(("_phase1", "_phase2"))
                                            and c not in ("rounds_phase1", "rounds_phase2")])
            target = old / file.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            frame.to_parquet(target)
    build_report(old, tmp_path / "report")
    two = sum(p.phases == 2 for p in plans.values())
    readme = (tmp_path / "report" / "masbench" / "README.md").read_text()
    assert f"{two} two-phase runs were recorded without per-phase token counts" in readme
    t1 = table1(load_results(old).runs)
    for condition in ("abl_message", "camoc"):
        for protocol in PROTOCOLS:
            assert pd.isna(t1.loc[("scripted-loopback", condition), (protocol, "TE")])
        assert t1.loc[("scripted-loopback", "base"), (protocol, "TE")] > 0
