"""The layout rule holds: a family installed from outside masgrid (tests/plugins/masgrid_relay,
installed by `make test`) runs end to end with no edit to masgrid - a run, a sweep from its own
conf folder, the report with its table, its site panel and its CLI subcommand - and its rows
agree with an independent computation of the instances."""

from __future__ import annotations

import json
import random
import re
from importlib.metadata import entry_points
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.platform.commands.cli import main

pytestmark = pytest.mark.slow


def _installed() -> bool:
    return any(ep.name == "relay" for ep in entry_points(group="masgrid.families"))


@pytest.fixture(scope="module")
def relay_results(tmp_path_factory, ray_session):
    if not _installed():
        pytest.fail("the relay test family is not installed: `make test` installs tests/plugins/masgrid_relay "
                    "(pip install --no-deps --no-build-isolation -e tests/plugins/masgrid_relay)")
    root = tmp_path_factory.mktemp("relay")
    assert main(["run", "task=relay/sum", "agents=4", f"results_dir={root}"]) == 0
    assert main(["run", "-m", "sweep=relay", f"results_dir={root}", "relay.lie=1", "sweep.progress=off"]) == 0
    assert main(["report", str(root)]) == 0
    return root


def _total(agents: int, k: int, seed: int, high: int) -> int:
    """The instance's sum, drawn here as the family's generator is documented to draw it."""
    rng = random.Random(seed)
    return sum(rng.randint(0, high) for _ in range(agents * k))


def test_runs_and_sweep_record_the_family_columns(relay_results):
    runs = pd.read_parquet(relay_results / "runs")
    assert len(runs) == 5 and set(runs["status"]) == {"ok"} and set(runs["protocol"]) == {"broadcast"}
    for run in runs.itertuples():
        options = json.loads(run.config_json)["relay"]
        assert run.relay_total == _total(run.agents, run.k, run.seed, options["high"])
        liar = options["lie"] if 0 <= options["lie"] < run.agents else None
        assert bool(run.success) == (liar is None)
        assert run.sr == pytest.approx((run.agents - (liar is not None)) / run.agents)
        assert run.relay_mean_error == pytest.approx((liar is not None) / run.agents)
    # the sweep came from the family's own conf/sweep/relay.yaml: agents 2,3 x seeds 0,1
    swept = runs[runs["agents"] != 4]
    assert sorted(zip(swept["agents"], swept["seed"])) == [(2, 0), (2, 1), (3, 0), (3, 1)]


def test_the_report_has_the_family_table(relay_results):
    report = relay_results / "report"
    assert "Relay: [relay/README.md](relay/README.md)" in (report / "README.md").read_text()
    table = pd.read_csv(report / "relay" / "success_by_n.csv").set_index("agents")
    runs = pd.read_parquet(relay_results / "runs")
    expected = runs.groupby("agents")["success"].mean()
    assert table["success"].to_dict() == pytest.approx(expected.to_dict())


def test_the_site_has_the_family_panel(relay_results):
    site = relay_results / "report" / "site"
    assert '<script src="assets/panels/relay.js"></script>' in (site / "run.html").read_text()
    assert "MASGRID_PANELS.relay" in (site / "assets" / "panels" / "relay.js").read_text()
    run = pd.read_parquet(relay_results / "runs").iloc[0]
    data = (site / "data" / "runs" / run["run_id"] / "family.js").read_text()
    payload = json.loads(data[data.index("{"):data.rindex("}") + 1])
    assert payload["kind"] == "relay" and payload["total"] == run["relay_total"]
    index = (site / "data" / "index.js").read_text()
    assert '"Relay"' in index


def test_the_family_cli_subcommand(capsys):
    assert main(["relay-total", "--agents", "3", "--k", "2", "--seed", "7"]) == 0
    assert int(capsys.readouterr().out.strip()) == _total(3, 2, 7, 99)
    assert main(["--help"]) == 0
    assert re.search(r"masgrid relay-total --agents N", capsys.readouterr().out)


def test_the_option_block_is_validated_before_ray():
    from masgrid._private.platform.run.config import ConfigError, RunConfig

    with pytest.raises(ConfigError, match="relay.high"):
        RunConfig.from_mapping({"task": "relay/sum", "relay": {"high": 0}})
    with pytest.raises(ConfigError, match="relay.nope"):
        RunConfig.from_mapping({"task": "relay/sum", "relay": {"nope": 1}})


def test_docs_of_masgrid_do_not_list_the_plugin_columns():
    from masgrid._private.platform.results.schema_doc import documented_metrics

    assert "relay_total" not in documented_metrics()
    assert "relay_total" in __import__("masgrid._private.platform.results.table_schemas", fromlist=["RUN_METRICS"]).RUN_METRICS
    assert Path(__file__).with_name("masgrid_relay").is_dir()


def test_an_undeclared_metric_fails_the_run_instead_of_vanishing(tmp_path, monkeypatch):
    """The recorder keeps only declared columns; a family reporting another one is told so."""
    if not _installed():
        pytest.fail("the relay test family is not installed (make test installs it)")
    import masgrid
    from masgrid_relay.tasks import RelaySum

    original = RelaySum.score

    def score(self, instance, answers):  # type: ignore[no-untyped-def]
        result = original(self, instance, answers)
        result.metrics["relay_forgotten"] = 1
        return result

    monkeypatch.setattr(RelaySum, "score", score)
    summary = masgrid.run(task="relay/sum", agents=2, results_dir=str(tmp_path), execution__executor="local")
    assert summary.status == "failed" and summary.error_class == "task_error"
    assert "relay_forgotten" in (summary.error or "") and "Family.metrics" in (summary.error or "")


def test_masgrid_families_lists_every_installed_family(capsys):
    assert main(["families", "--json"]) == 0
    rows = {row["name"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    assert list(rows)[:5] == ["masbench", "silo", "agentsnet", "simas", "cooper"]
    relay = rows["relay"]
    assert relay["tasks"] == ["relay/sum"] and relay["default_protocol"] == "broadcast"
    assert relay["metrics"] == ["relay_total", "relay_mean_error"] and relay["commands"] == ["relay-total"]
    assert relay["folder"].endswith("masgrid_relay")
