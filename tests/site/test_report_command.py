"""`masgrid report` on a SILO-only directory: no MAS-Bench table, the SILO report in its own
folder, and the site listing the run and linking the reports."""

from __future__ import annotations

from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.site.jsdata import read_data


def test_silo_only_results_get_the_silo_report_and_the_site(tmp_path, capsys):
    root = tmp_path / "silo"
    cfg = RunConfig.from_mapping(dict(results_dir=str(root), task="silo/I-01", protocol="p2p", agents=3, seed=0,
                                      execution={"executor": "local"}))
    assert run_local(cfg).status == "ok"
    assert main(["report", str(root)]) == 0
    report = root / "report"
    assert not list(report.glob("table*")) and not list(report.glob("figure*")) and not list(report.glob("welch*"))
    assert (report / "silo" / "README.md").is_file() and (report / "silo" / "table1.csv").is_file()
    assert "Families recorded: SILO-Bench" in (report / "README.md").read_text()
    key, index = read_data(report / "site" / "data" / "index.js")
    assert key == "index" and [r["run_id"] for r in index["runs"]] == [cfg.run_id]
    assert index["families"] == ["SILO-Bench"]
    assert index["reports"] == {"report index": "../README.md", "SILO-Bench report": "../silo/README.md"}
    assert (report / "site" / "data" / "runs" / cfg.run_id / "agent-2.js").is_file()
    assert "site: " in capsys.readouterr().out
