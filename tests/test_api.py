"""The public Python API, used as a notebook would: one run, a sweep that resumes with the
CLI's identities, the tables with the validity rule stated, the report."""

from __future__ import annotations

import pandas as pd
import pytest

import masgrid
from masgrid._private.platform.commands.cli import main

pytestmark = pytest.mark.slow


def test_the_public_names_are_documented_and_importable():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    for name in masgrid.__all__:
        assert getattr(masgrid, name) is not None
        assert f"`{name}" in doc or f"{name}(" in doc, f"docs/api.md does not mention {name}"


def test_run_sweep_load_and_report_as_a_notebook_would(tmp_path, ray_session, capsys):
    results = tmp_path / "results"
    summary = masgrid.run(task="max", protocol="kv", agents=3, k=2, seed=5, results_dir=str(results))
    assert summary.status == "ok"
    # the CLI computes the same identity for the same setting and skips it on a sweep
    cli_id = masgrid.compose("task=max", "protocol=kv", "agents=3", "k=2", "seed=5",
                             f"results_dir={results}")[0].run_id
    assert cli_id == summary.run_id

    axes = {"agents": [2, 3], "seed": [5, 6]}
    first = masgrid.sweep(axes, "task=max", "protocol=kv", "k=2", f"results_dir={results}")
    assert (first.total, first.skipped_ok, first.ran, first.ok) == (4, 1, 3, 3)
    again = masgrid.sweep(axes, "task=max", "protocol=kv", "k=2", f"results_dir={results}")
    assert (again.skipped_ok, again.ran) == (4, 0)  # resume: nothing left to run
    # the CLI's sweep over the same grid finds every point recorded
    assert main(["run", "-m", "task=max", "protocol=kv", "k=2", "agents=2,3", "seed=5,6",
                 f"results_dir={results}", "sweep.progress=off"]) == 0
    assert len(pd.read_parquet(results / "runs")) == 4

    res = masgrid.load_results(results)
    runs, agents, events = res
    assert len(runs) == 4 and set(runs["status"]) == {"ok"} and res.note.startswith("4 of 4 runs used")
    assert set(agents["run_id"]) == set(runs["run_id"]) and set(events["run_id"]) == set(runs["run_id"])

    index = masgrid.report(results)
    assert index == results / "report" / "README.md"
    assert "MAS-Bench: [masbench/README.md]" in index.read_text()
    assert (results / "report" / "site" / "index.html").is_file()


def test_the_validity_filter_is_applied_and_stated(tmp_path):
    """An invalid row stays in all_runs, is left out of runs, and the note says so."""
    from masgrid._private.platform.results.table_schemas import runs_schema

    rows = [{"run_id": f"r{i}", "task": "max", "protocol": "kv", "status": s, "point_id": f"p{i}",
             "prompt_hash": "h", "model": "m"} for i, s in enumerate(["ok", "invalid", "degraded"])]
    folder = tmp_path / "runs" / "task=max" / "protocol=kv"
    folder.mkdir(parents=True)
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = runs_schema()
    table = pa.Table.from_pylist(rows, schema=schema).drop(["task", "protocol"])
    pq.write_table(table, folder / "part-0.parquet")
    res = masgrid.load_results(tmp_path)
    assert sorted(res.runs["run_id"]) == ["r0", "r2"] and len(res.all_runs) == 3
    assert "invalid" in res.note and res.note.startswith("2 of 3 runs used")
    assert sorted(masgrid.load_results(tmp_path, include_invalid=True).runs["run_id"]) == ["r0", "r1", "r2"]
    assert res.damaged == []
    # a damaged file is set aside by the load that finds it and still listed by every later one
    broken = tmp_path / "agents" / "task=max" / "protocol=kv"
    broken.mkdir(parents=True)
    (broken / "part-r0.parquet").write_bytes(b"PAR1 not a parquet file")
    first, later = masgrid.load_results(tmp_path).damaged, masgrid.load_results(tmp_path).damaged
    assert len(first) == 1 and "part-r0.parquet" in first[0] and later == first


def test_bad_configuration_is_one_error_before_ray():
    with pytest.raises(masgrid.ConfigError, match="agents"):
        masgrid.run(task="max", agents=0)
    with pytest.raises(TypeError):
        masgrid.run(masgrid.compose("task=max")[0], "agents=3")
