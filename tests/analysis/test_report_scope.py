"""`masgrid report` is the MAS-Bench report: AgentsNet runs recorded in the same results
directory stay out of its tables (their metrics mean something else) and the index says so;
a directory without MAS-Bench runs is a one-line error naming the other reports."""

from __future__ import annotations

import pandas as pd
import pytest

from masgrid.analysis.report import build_report
from masgrid.platform.config import RunConfig
from masgrid.platform.launch import run_local


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
    index = (tmp_path / "README.md").read_text()
    assert "4 runs (4 ok)" in index  # what is recorded
    assert "Left out (not MAS-Bench" in index and "1 agentsnet/coloring, 1 agentsnet/vertex_cover" in index
    assert "cover task max;" in index  # no sorting runs: Tables 1-8 describe max, never a pool of tasks
    table4 = pd.read_csv(tmp_path / "table4.csv")
    assert table4.loc[table4["model"] == "Total", "runs"].item() == 2
    assert list(pd.read_csv(tmp_path / "table9.csv").iloc[:, 0].dropna()) == ["max"]
    table1 = (tmp_path / "table1.md").read_text()
    assert "local" not in table1 and "broadcast" in table1


def test_a_directory_without_masbench_runs_is_a_clear_error(tmp_path):
    root = tmp_path / "an"
    _run(root, task="agentsnet/vertex_cover", protocol="local", agents=4, graph="ws", seed=0)
    with pytest.raises(ValueError, match=r"no MAS-Bench runs under .* \(1 agentsnet/vertex_cover\); use their own "
                                         r"reports: AgentsNet: python -m masgrid.analysis.agentsnet"):
        build_report(root, tmp_path / "report")
