"""The LOCAL protocol through real model calls: a loopback chat-completions server, the
openai backend in Ray actors, the one-retry rule for malformed JSON, and the records."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.support.chat_server import ChatServer, Reply

SEED = 5


def test_malformed_json_gets_one_retry(ray_session, tmp_path: Path) -> None:
    inst = get_task("agentsnet/consensus").generate(4, 1, SEED, graph="dt")
    names = inst.meta["names"]
    flaky, stubborn = names[0], names[1]  # flaky: bad first reply each round; stubborn: always bad

    def reply(messages: list[dict[str, str]]) -> str:
        system, last = messages[0]["content"], messages[-1]["content"]
        me = re.search(r"You are (\S+)\.", system).group(1)
        nbs = re.search(r"Your neighbours are: (.*?)\. Nobody", system).group(1).split(", ")
        if "### Final Answer ###" in last:
            return "All my neighbours said 1.\n### Final Answer ### 1"
        retry = "could not be read as a JSON" in last
        if me == stubborn or (me == flaky and not retry):
            return '{"Nobody": "hi"}' if me == flaky else "I will tell everyone that I pick 1."
        return "Reasoning first.\n" + '{' + ", ".join(f'"{nb}": "I pick 1"' for nb in nbs) + '}'

    with ChatServer(lambda request: Reply(reply(request["messages"]))) as server:
        cfg = RunConfig.from_mapping({
            "task": "agentsnet/consensus", "protocol": "local", "agents": 4, "graph": "dt", "seed": SEED,
            "backend": "openai", "results_dir": str(tmp_path),
            "model": {"name": "loopback", "base_url": server.base_url, "max_retries": 0, "timeout_s": 30},
        })
        [summary] = run_many([cfg], max_concurrent=1)
    assert summary.status == "ok", summary.error
    rounds = inst.params["rounds"]
    runs = pd.read_parquet(tmp_path / "runs")
    row = runs.iloc[0]
    # flaky: one retry per message round; stubborn: a retry per round, each failing again
    assert row["fallbacks"] == 2 * rounds and row["failed_parses"] == rounds
    assert row["model_calls"] == 4 * (rounds + 1) + 2 * rounds and row["success"]
    agents = pd.read_parquet(tmp_path / "agents").set_index("agent")
    assert agents.loc[0, "fallbacks"] == rounds and agents.loc[0, "failed_parses"] == 0
    assert agents.loc[1, "fallbacks"] == rounds and agents.loc[1, "failed_parses"] == rounds
    assert (agents["submission"] == '"1"').all()
    events = pd.read_parquet(tmp_path / "events")
    invalid = events[events.verb == "invalid_reply"]
    assert len(invalid) == 2 * rounds and invalid["reply"].str.contains("Nobody").sum() == rounds
    # The retry request carries the invalid reply and the error message, in the same round.
    retries = [r for r in server.requests if "could not be read as a JSON" in r["messages"][-1]["content"]]
    assert len(retries) == 2 * rounds
    assert all(r["messages"][-2]["role"] == "assistant" for r in retries)
    # The stubborn agent never delivered anything: its neighbours list it as silent.
    deliveries = events[(events.kind == "delivery")]
    stubborn_nbs = inst.inputs[1]["neighbors"]
    for nb in stubborn_nbs:
        texts = deliveries[deliveries.agent == names.index(nb)]["reply"]
        assert all(stubborn in t.split("No message arrived this round from: ")[-1] for t in texts)
