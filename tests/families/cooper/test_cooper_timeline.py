"""Timelines of CooperBench runs (families/cooper/timeline.py): which runs are drawn, the files
written, and a run without timed events as a clear error."""

from __future__ import annotations

import pandas as pd
import pytest

from masgrid.families.cooper.timeline import pick_runs, timeline_figure


def _runs() -> pd.DataFrame:
    return pd.DataFrame([{"run_id": rid, "task": "cooper/p_task/1", "model": "m", "cooper_setting": setting,
                          "cooper_features": "1,2", "success": ok, "merge_stage": "naive", "conflicts_naive": 0}
                         for rid, setting, ok in (("b", "coop", True), ("a", "coop", True), ("d", "coop", False),
                                                  ("c", "coop", False), ("e", "solo", False))])


def test_pick_runs_takes_the_first_failed_and_the_first_successful_coop_run():
    assert sorted(pick_runs(_runs())) == ["a", "c"]
    assert pick_runs(_runs()[lambda r: r["success"]]) == ["a"]
    assert pick_runs(pd.DataFrame()) == []


def test_timeline_is_written_as_png_and_pdf(tmp_path):
    events = pd.DataFrame([
        {"run_id": "a", "seq": 0, "t": 100.0, "agent": 0, "phase": 1, "kind": "message", "tool": "send_message",
         "text": "I'll take lines 1-5", "peers": [1]},
        {"run_id": "a", "seq": 1, "t": 100.5, "agent": 0, "phase": 1, "kind": "plan", "tool": None, "text": "p",
         "peers": None},
        {"run_id": "a", "seq": 2, "t": 101.0, "agent": 1, "phase": 2, "kind": "action", "tool": "view", "text": "{}",
         "peers": None},
        {"run_id": "a", "seq": 3, "t": 102.0, "agent": 1, "phase": 2, "kind": "finish", "tool": None, "text": "done",
         "peers": None}])
    run = _runs().set_index("run_id", drop=False).loc["a"]
    png, pdf = timeline_figure(events, run, tmp_path / "timeline_a.png")
    assert png.stat().st_size > 1000 and pdf.read_bytes().startswith(b"%PDF")
    with pytest.raises(ValueError, match="run a has no timed events"):
        timeline_figure(events.assign(t=None), run, tmp_path / "x.png")
