"""Issue 12, case 6: a truncated or corrupt result file neither blocks a resume nor a report;
it is reported, set aside, and its run is redone."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from masgrid._private.analysis.integrity import QUARANTINE
from masgrid._private.analysis.report import build_report
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.sweeps.sweep import plan_sweep


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
    text = (tmp_path / "report" / "README.md").read_text()
    assert "1 of 1 runs used" in text
    # the resume set these files aside, not the report: its index lists them all the same
    assert "## Damaged files set aside (3)" in text
    assert f"damaged runs file {truncated}" in text and f"damaged events file {garbage}" in text
    assert f"now: run {a} not recorded (a resume runs it)" in text and "set aside runs file" in text

    for cfg in plan.todo:
        assert run_local(cfg).status == "ok"
    build_report(root, tmp_path / "report")
    text = (tmp_path / "report" / "README.md").read_text()
    assert f"now: run {a} recorded again" in text and "not recorded (a resume" not in text
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


def test_masgrid_report_lists_what_it_set_aside_in_its_index_and_site(tmp_path, capsys):
    from masgrid._private.platform.commands.cli import main
    from masgrid._private.site.jsdata import read_data

    root = tmp_path / "results"
    cfgs = configs(root)
    for cfg in cfgs:
        run_local(cfg)
    broken = only_file(root, "agents", cfgs[0].run_id)
    broken.write_bytes(b"")
    assert main(["report", str(root)]) == 0
    assert "masgrid report: damaged agents file" in capsys.readouterr().out  # the terminal (wrapped by rich)
    text = (root / "report" / "README.md").read_text()
    assert "## Damaged files set aside (2)" in text
    assert f"damaged agents file {broken} (ArrowInvalid: Parquet file size is 0 bytes)" in text
    assert f"now: run {cfgs[0].run_id} not recorded (a resume runs it)" in text
    _, index = read_data(root / "report" / "site" / "data" / "index.js")
    damaged = {entry["table"]: entry for entry in index["damaged"]}
    assert set(damaged) == {"agents", "runs"}
    assert damaged["agents"]["path"] == str(broken) and "0 bytes" in damaged["agents"]["error"]
    assert damaged["runs"]["error"] == "set aside" and not damaged["runs"]["recorded_again"]
    assert Path(damaged["agents"]["moved_to"]).is_file() and damaged["agents"]["time"]
    assert len(index["runs"]) == 2


def test_an_unparsable_log_line_does_not_hide_the_others(tmp_path, caplog):
    from masgrid._private.analysis.integrity import read_log

    log = tmp_path / QUARANTINE / "log.jsonl"
    log.parent.mkdir()
    log.write_text('{"path": "p", "table": "runs", "run_id": null, "error": "e", "lost": "l"}\n'
                   '{"path": "cut short\n\n')
    assert [entry.path for entry in read_log(tmp_path)] == ["p"]
    assert "line 2 is not a quarantine entry" in caplog.text


def test_damaged_data_pages_behind_a_readable_footer_are_set_aside_too(tmp_path):
    from masgrid._private.analysis.load import load_results

    root = tmp_path / "results"
    cfgs = configs(root)
    for cfg in cfgs:
        run_local(cfg)
    hidden = only_file(root, "events", cfgs[1].run_id)
    data = bytearray(hidden.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    data[4:len(data) - footer - 8] = b"\xab" * (len(data) - footer - 12)  # pages only; the footer reads
    hidden.write_bytes(bytes(data))
    loaded = load_results(root)
    assert cfgs[1].run_id not in set(loaded.runs["run_id"]) and len(loaded.runs) == 2
    assert cfgs[1].run_id not in set(loaded.events["run_id"])
    assert {(d.table, d.run_id) for d in loaded.quarantined} == {("events", cfgs[1].run_id), ("runs", cfgs[1].run_id)}
    assert [d.error for d in loaded.quarantined][0].startswith("OSError: Couldn't deserialize thrift")
