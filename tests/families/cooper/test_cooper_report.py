"""`masgrid report` on a results directory of CooperBench runs written as real Parquet in the
platform's layout: the cooper/ section with its tables, PNG (>= 200 dpi) and PDF figures, and
the numbers in its CSVs equal to the tables computed from the frames directly."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from masgrid.families.cooper import analysis as cooper
from masgrid.families.cooper.report import main
from masgrid._private.analysis.report import build_report
from tests.families.cooper.cooper_frames import random_runs

FIGURES = ("fig_success", "fig_difficulty", "fig_conflicts", "fig_communication", "fig_scaling")


def _write(root: Path, table: str, frame: pd.DataFrame) -> None:
    for (task,), part in frame.groupby(["task"]):
        folder = root / table / f"task={quote(str(task), safe='')}" / "protocol=cooper"
        folder.mkdir(parents=True, exist_ok=True)
        part.drop(columns=["task", "protocol"], errors="ignore").to_parquet(folder / "part-0.parquet", index=False)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("cooper")
    rng = np.random.default_rng(11)
    runs = random_runs(rng, models=2, tasks=8, repeats=1, sizes=(2, 3))
    runs["protocol"] = "cooper"
    runs.loc[runs.index[:3], "cooper_sandbox"] = "none"
    events = []
    for r in runs[runs["cooper_setting"] == "coop"].itertuples():
        events += [{"run_id": r.run_id, "task": r.task, "seq": 0, "t": 0.5, "agent": 0, "kind": "message",
                    "tool": None, "text": "I'll take lines 1-9 of a.py"},
                   {"run_id": r.run_id, "task": r.task, "seq": 1, "t": 1.0, "agent": 0, "kind": "plan", "tool": None,
                    "text": "plan"},
                   {"run_id": r.run_id, "task": r.task, "seq": 2, "t": 2.0, "agent": 1, "kind": "action",
                    "tool": "view", "text": "{}"},
                   {"run_id": r.run_id, "task": r.task, "seq": 3, "t": 3.0, "agent": 1, "kind": "message",
                    "tool": None, "text": "Which lines are yours?"}]
    _write(root, "runs", runs)
    _write(root, "events", pd.DataFrame(events))
    return root, runs


def test_masgrid_report_writes_the_cooper_section(results, tmp_path):
    root, runs = results
    build_report(root, tmp_path)
    section = tmp_path / "cooper"
    assert "CooperBench: [cooper/README.md](cooper/README.md)" in (tmp_path / "README.md").read_text()
    readme = (section / "README.md").read_text()
    failed = int((runs["status"] == "failed").sum())
    assert f"{len(runs) - failed} of {len(runs)} runs used" in readme
    bare = int(((runs["cooper_sandbox"] == "none") & (runs["status"] == "ok")).sum())
    assert f"{bare} runs ran without the sandbox" in readme
    for name in FIGURES:
        png, pdf = section / f"{name}.png", section / f"{name}.pdf"
        assert png.exists() and pdf.exists()  # the index lists the family's README; its files sit beside it
        with Image.open(png) as image:
            assert min(image.info["dpi"]) >= 199  # stored as dots per metre: 200 dpi reads back as 199.99
        assert pdf.read_bytes().startswith(b"%PDF")
    timelines = list(section.glob("timeline_*.png"))
    assert len(timelines) == 2 and all(p.name[len("timeline_"):-4] in set(runs["run_id"]) for p in timelines)
    success = pd.read_csv(section / "success.csv")
    direct = cooper.success_by_setting(runs.drop(columns="protocol"))
    assert success[["model", "setting", "n", "k"]].equals(direct[["model", "setting", "n", "k"]])
    comm = pd.read_csv(section / "communication.csv")
    assert (comm["messages"] == comm["runs"]).all() and (comm["steps"] == 2 * comm["runs"]).all()
    assert (section / "table4.md").read_text().startswith("# Table 4")
    scaling = pd.read_csv(section / "scaling.csv")
    assert sorted(scaling["agents"].unique()) == [2, 3]
    # the appendix J judge was not run: the README says so and no judged table (no zeros) is written
    assert "LLM-judged communication errors (appendix J): not run" in readme
    assert not (section / "communication_errors_judged.csv").exists()


def test_judged_communication_errors_appear_labelled(results, tmp_path):
    """With `masgrid cooper judge` rows beside the results, the section shows their rates
    with the judge model in the title, next to the rule-based communication table."""
    root, runs = results
    import shutil

    shutil.copytree(root, tmp_path / "r")
    coop = runs[(runs["cooper_setting"] == "coop") & (runs["status"] == "ok")]
    rows = [{"run_id": r, "model": m, "judge_model": "judge-z", "prompt_version": "abc", "status": "ok",
             "category": "C4b" if i % 2 else None, "group": "repetition" if i % 2 else None}
            for i, (r, m) in enumerate(zip(coop["run_id"], coop["model"]))]
    (tmp_path / "r" / "cooper_judgments").mkdir()
    pd.DataFrame(rows).to_parquet(tmp_path / "r" / "cooper_judgments" / "part-x.parquet", index=False)
    assert main([str(tmp_path / "r"), str(tmp_path / "out")]) == 0
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "Communication errors by LLM judge (appendix J, Figure 5): judge-z" in readme and "not run" not in readme
    judged = pd.read_csv(tmp_path / "out" / "communication_errors_judged.csv")
    rep = judged[judged["group"] == "repetition"]
    assert rep["n"].sum() == len(rows) and rep["detected"].sum() == len(rows) // 2
    assert "judge-z (prompt abc)" in (tmp_path / "out" / "communication_errors_judged.md").read_text()


def test_the_cooper_report_cli_on_a_directory_without_cooper_runs(tmp_path, capsys):
    assert main([str(tmp_path / "empty"), str(tmp_path / "x")]) == 1
    assert "cooper_report: no CooperBench runs" in capsys.readouterr().out


def test_console_reports_cooperbench_success_and_every_file(results, tmp_path):
    """Issue 25: the console's SR% for cooper rows is CooperBench's success rate (every feature of
    the run passes), not the mean per-agent `sr`; and the file count covers every file written
    (the family section's tables and figures, not just its index)."""
    from rich.console import Console

    from masgrid._private.analysis.report import headline_rate, write_report
    from masgrid.families.masbench.tables import completed

    root, runs = results
    used = completed(runs)
    rate = headline_rate(used)
    for key, value in rate.items():
        part = used[(used["task"] == key[0]) & (used["protocol"] == key[1]) & (used["model"] == key[2])]
        assert value == pytest.approx(100 * part["success"].astype(float).mean())
    console = Console(record=True, width=200)
    assert write_report(root, tmp_path / "out", console=console) == 0
    text = console.export_text()
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert f"report: {len(written)} files in" in text and len(written) > 10
    assert "CooperBench rows: SR% is the paper's success rate" in text


def test_headline_rate_differs_from_the_per_agent_rate_where_it_should():
    from masgrid._private.analysis.report import headline_rate

    frame = pd.DataFrame({"task": ["cooper/p/1"] * 2 + ["sorting"] * 2, "protocol": ["workspace"] * 2 + ["p2p"] * 2,
                          "model": ["m"] * 4, "sr": [0.5, 1.0, 0.5, 1.0], "success": [False, True, False, True]})
    rate = headline_rate(frame)
    assert rate[("cooper/p/1", "workspace", "m")] == 50.0  # success: 1 of 2 runs
    assert rate[("sorting", "p2p", "m")] == 75.0  # other families keep their mean sr
