"""`masgrid report`: AgentsNet runs recorded in the same results directory stay out of the
MAS-Bench tables (their metrics mean something else) and get their own report in a
subfolder; a directory without MAS-Bench runs gets no MAS-Bench tables."""

from __future__ import annotations

import pandas as pd
import pytest

from masgrid._private.analysis.report import build_report
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local


def _run(root, **fields) -> None:
    cfg = RunConfig.from_mapping(dict(results_dir=str(root), execution={"executor": "local"}, **fields))
    assert run_local(cfg).status == "ok"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    for n in (2, 3):
        _run(root, task="max", agents=n, k=2)
    _run(root, task="agentsnet/vertex_cover", protocol="local", agents=4, graph="ws", seed=0)
    _run(root, task="agentsnet/coloring", protocol="local", agents=4, graph="ws", seed=0)
    return root


def test_other_benchmarks_stay_out_of_the_masbench_tables(mixed, tmp_path):
    build_report(mixed, tmp_path)
    assert "4 runs (4 ok)" in (tmp_path / "README.md").read_text()  # what is recorded
    index = (tmp_path / "masbench" / "README.md").read_text()
    assert "Left out (not MAS-Bench" in index and "1 agentsnet/coloring, 1 agentsnet/vertex_cover" in index
    assert "cover task max;" in index  # no sorting runs: Tables 1-8 describe max, never a pool of tasks
    table4 = pd.read_csv(tmp_path / "masbench" / "table4.csv")
    assert table4.loc[table4["model"] == "Total", "runs"].item() == 2
    assert list(pd.read_csv(tmp_path / "masbench" / "table9.csv").iloc[:, 0].dropna()) == ["max"]
    table1 = (tmp_path / "masbench" / "table1.md").read_text()
    assert "local" not in table1 and "broadcast" in table1


def test_a_directory_without_masbench_runs_gets_no_masbench_tables(tmp_path):
    root = tmp_path / "an"
    _run(root, task="agentsnet/vertex_cover", protocol="local", agents=4, graph="ws", seed=0)
    files = build_report(root, tmp_path / "report")
    names = {p.name for p in files}
    assert not any(n.startswith(("table", "welch", "failure", "figure")) for n in names), names
    assert not list((tmp_path / "report").rglob("table*")) and not (tmp_path / "report" / "masbench").exists()
    index = (tmp_path / "report" / "README.md").read_text()
    assert "MAS-Bench" not in index and "Families recorded: AgentsNet." in index
    assert (tmp_path / "report" / "agentsnet" / "agentsnet_report.md").is_file()
    assert "agentsnet/agentsnet_report.md" in index


def test_each_family_report_keeps_to_its_own_runs(mixed, tmp_path):
    build_report(mixed, tmp_path)
    agentsnet = (tmp_path / "agentsnet" / "agentsnet_report.md").read_text()
    assert "2 of 2 runs used" in agentsnet, agentsnet[:400]  # its two runs, not the two MAS-Bench ones
    assert "max" not in agentsnet.split("##")[0].replace("max_", "")


def test_build_report_lists_every_file_it_wrote(mixed, tmp_path):
    """The files build_report returns (what `masgrid report` counts) are every file under the
    report folder, the family sections' figures and tables included, each once."""
    files = build_report(mixed, tmp_path / "out")
    on_disk = {p for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert set(files) == on_disk and len(files) == len(set(files))
    assert any(p.parent.name == "agentsnet" and p.suffix == ".png" for p in files)
