"""`agentsnet.parser` and the `reference_unscorable` flag through a whole run: a real
OpenAI-compatible server on loopback, the in-process driver, real Parquet, the report.

Every agent writes a draft object and then its final one (which also names the agent
itself, a name that is no neighbour), and answers "Not sure" at the end; one call fails
with HTTP 500. The released code would deliver the final objects, read "Not sure" as "No"
and then divide by zero (nobody is a coordinator), and the failed call would have aborted
its run anyway; masgrid records the run, scores it 0 and flags it.
"""

from __future__ import annotations

import itertools
import re
import threading
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.agentsnet.analysis import write_report
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.support.chat_server import ChatServer, Reply


def _script() -> tuple:
    counter, lock = itertools.count(1), threading.Lock()

    def script(request: dict) -> Reply:
        with lock:
            number = next(counter)
        if number == 7:
            return Reply(status=500, text="overloaded")
        system, last = request["messages"][0]["content"], request["messages"][-1]["content"]
        if "### Final Answer ###" in last or "final answer" in last:
            return Reply("I think so. ### Final Answer ### Not sure")
        me = re.search(r"You are ([\w-]+)\.", system).group(1)
        nb = re.search(r"Your neighbours are: ([\w-]+)", system).group(1)
        return Reply(f'Draft: {{"{nb}": "DRAFT-{me}"}}\nFinal: {{"{nb}": "FINAL-{me}", "{me}": "to myself"}}')

    return script


def _run(tmp: Path, parser: str | None) -> tuple[RunConfig, pd.Series, pd.DataFrame, pd.DataFrame]:
    options = {"parser": parser} if parser else {}
    with ChatServer(_script()) as server:
        cfg = RunConfig.from_mapping(dict(task="agentsnet/vertex_cover", protocol="local", agents=4, graph="ba", seed=1,
                                          backend="openai", results_dir=str(tmp), preflight=False, agentsnet=options,
                                          execution={"executor": "local"},
                                          model={"name": "h", "base_url": server.base_url, "max_retries": 0}))
        summary = run_one(cfg)
    assert summary.status == "degraded", summary.error  # one failed call of 20+
    runs = pd.read_parquet(tmp / "runs")
    return cfg, runs.iloc[0], pd.read_parquet(tmp / "events"), pd.read_parquet(tmp / "agents")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return {p: _run(tmp_path_factory.mktemp(p), None if p == "strict" else p) for p in ("strict", "reference")}


def test_reference_mode_delivers_the_last_object_and_drops_non_neighbours(recorded: dict) -> None:
    cfg, run, events, agents = recorded["reference"]
    deliveries = events.loc[events["kind"] == "delivery", "reply"].str.cat()
    assert "FINAL-" in deliveries and "DRAFT-" not in deliveries and "to myself" not in deliveries
    sent = events[(events["kind"] == "command") & (events["verb"] == "messages") & events["ok"]]
    assert sent["reply"].str.startswith("not delivered, not a neighbour: ").all() and len(sent) == 4 * 4 - 1
    assert run["fallbacks"] == 0  # "Not sure" is read as "No": nothing to retry
    assert set(agents["submission"].dropna()) == {'"No"'}
    assert cfg.identity()["agentsnet"]["parser"] == "reference" and run["reply_parser"] == "reference"


def test_strict_mode_delivers_the_first_object_and_retries_the_answer(recorded: dict) -> None:
    cfg, run, events, agents = recorded["strict"]
    deliveries = events.loc[events["kind"] == "delivery", "reply"].str.cat()
    assert "DRAFT-" in deliveries and "FINAL-" not in deliveries
    assert run["failed_parses"] >= 3 and agents["submission"].isna().all()
    assert "parser" not in cfg.identity()["agentsnet"]  # the default keeps the ids of earlier runs
    assert cfg.run_id != recorded["reference"][0].run_id


@pytest.mark.parametrize("parser", ["strict", "reference"])
def test_the_run_is_scored_and_flagged(recorded: dict, parser: str) -> None:
    run = recorded[parser][1]
    assert run["soft_score"] == 0.0 and not run["success"] and run["model_errors"] == 1
    assert run["reference_unscorable"] and run["reference_unscorable_reason"] == "model_error+no_coordinator"


def test_report_both_ways(recorded: dict, tmp_path: Path) -> None:
    results = Path(recorded["reference"][0].results_dir)
    text = write_report(results, tmp_path / "all").read_text()
    assert "Run set 'all': 1 runs the released code would not have recorded are counted" in text
    assert "1 model_error+no_coordinator" in text and "agentsnet.parser=reference" in text
    with pytest.raises(ValueError, match="run set 'reference'"):
        write_report(results, tmp_path / "ref", run_set="reference")
