"""Issue 12, case 6: a truncated or corrupt result file neither blocks a resume nor a report;
it is reported, set aside, and its run is redone."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from masgrid.analysis.integrity import QUARANTINE
from masgrid.analysis.report import build_report
from masgrid.platform.config import RunConfig
from masgrid.platform.launch import run_local
from masgrid.platform.sweep import plan_sweep


def configs(root) -> list[RunConfig]:
    return [RunConfig.from_mapping(dict(task="sorting", agents=n, k=2, results_dir=str(root),
                                        execution={"executor": "local"})) for n in (1, 2, 3)]


def only_file(root, table: str, run_id: str):
    (path,) = list((root / table).rglob(f"part-{run_id}*.parquet"))
    return path


def test_damaged_files_are_set_aside_and_their_runs_redone(tmp_path, capsys):
    root = tmp_path / "results"
    cfgs = configs(root)
    for cfg in cfgs:
        assert run_local(cfg).status == "ok"
    a, b, c = (cfg.run_id for cfg in cfgs)
    truncated = only_file(root, "runs", a)
    truncated.write_bytes(truncated.read_bytes()[:40])
    garbage = only_file(root, "events", b)
    garbage.write_bytes(b"PAR1 this is not parquet at all")

    plan = plan_sweep(cfgs)
    assert sorted(c.run_id for c in plan.todo) == sorted([a, b]) and plan.skipped_ok == 1
    err = capsys.readouterr().err
    assert f"damaged runs file {truncated}" in err and f"damaged events file {garbage}" in err
    log = [json.loads(line) for line in (root / QUARANTINE / "log.jsonl").read_text().splitlines()]
    assert {(entry["table"], entry["run_id"]) for entry in log} == {("runs", a), ("events", b), ("runs", b)}
    assert all(Path(e["moved_to"]) == root / QUARANTINE / Path(e["path"]).relative_to(root) for e in log)
    assert all(Path(e["moved_to"]).exists() and not Path(e["path"]).exists() for e in log)

    build_report(root, tmp_path / "report")  # reads despite what happened; c is there
    assert "1 of 1 runs used" in (tmp_path / "report" / "README.md").read_text()

    for cfg in plan.todo:
        assert run_local(cfg).status == "ok"
    runs = pd.read_parquet(root / "runs")
    assert sorted(runs["run_id"]) == sorted([a, b, c]) and set(runs["status"]) == {"ok"}
    events = pd.read_parquet(root / "events")
    assert not events.duplicated(["run_id", "seq"]).any()
    assert plan_sweep(cfgs).todo == []


def test_a_report_alone_quarantines_and_lists_damage(tmp_path):
    root = tmp_path / "results"
    cfgs = configs(root)
    for cfg in cfgs:
        run_local(cfg)
    broken = only_file(root, "agents", cfgs[0].run_id)
    broken.write_bytes(b"")
    build_report(root, tmp_path / "report")
    text = (tmp_path / "report" / "README.md").read_text()
    assert "Damaged files set aside" in text and str(broken) in text
    assert "2 of 2 runs used" in text  # the run with the damaged agents file is incomplete until re-run
