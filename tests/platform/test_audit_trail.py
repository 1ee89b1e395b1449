"""Acceptance (issue 11, audit trail): the message list of every model call, rebuilt from
the events table alone, equals byte for byte what a real OpenAI-compatible server on
loopback received, in every phase and on the validator's retry path.

The server's request log is written by the server, independently of the code under test.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.analysis.load import read_table
from masgrid._private.analysis.transcript import calls
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from masgrid._private.platform.results.table_schemas import EVENT_KINDS
from tests.support.chat_server import ChatServer, Reply


def fenced(*commands: str) -> str:
    return "\n".join(f"```\n{c}\n```" for c in commands)


def turn(request: dict) -> int:
    return sum(m["role"] == "assistant" for m in request["messages"])


def run(tmp: Path, script, executor: str = "local", **over: object) -> tuple[RunConfig, list[dict]]:
    with ChatServer(script) as server:
        cfg = RunConfig.from_mapping({
            "backend": "openai", "model": {"name": "local_vllm", "base_url": server.base_url, "max_retries": 0},
            "results_dir": str(tmp), "execution": {"executor": executor}, **over})
        summary = run_one(cfg)
        assert summary.status == "ok", summary.error
        return cfg, list(server.requests)


def assert_rebuilt_equals_sent(tmp: Path, requests: list[dict]) -> pd.DataFrame:
    events = read_table(tmp, "events")
    rebuilt = calls(events)
    # Every call is one request here (no client retries), so the two multisets must match
    # exactly; JSON text compares the message lists byte for byte.
    sent = Counter(json.dumps(r["messages"]) for r in requests)
    assert Counter(json.dumps(c.messages) for c in rebuilt) == sent
    assert len(rebuilt) == len(requests) == (events["kind"] == "model_call").sum()
    assert set(events["kind"]) <= set(EVENT_KINDS)  # every kind written is documented
    return events


def sorting_script(request: dict) -> Reply:
    """Share data, read, then submit some answer (phase 2 of CAMOC asks again)."""
    plan = [fenced("broadcast_message my data, please send yours", "receive_messages"), fenced("receive_messages"),
            fenced("submit_result [1, 2]")]
    return Reply(plan[min(turn(request), len(plan) - 1)])


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_camoc_both_phases_rebuild_exactly(tmp_path: Path, executor: str, request: pytest.FixtureRequest) -> None:
    if executor == "ray":
        request.getfixturevalue("ray_session")
    cfg, requests = run(tmp_path, sorting_script, executor, task="sorting", condition="camoc",
                        protocol="broadcast", agents=2, k=2, seed=3)
    events = assert_rebuilt_equals_sent(tmp_path, requests)
    assert set(events["phase"]) == {1, 2}
    # phase 2 starts from a new system prompt (the rerun's), which the agents table does not hold
    prompts = events[events["kind"] == "prompt"].sort_values(["agent", "phase"])
    assert len(prompts) == 2 * cfg.agents and prompts["text"].str.contains("first attempt").tolist() == [False, True] * 2
    # observations quote command replies instead of repeating them
    obs = events[events["kind"] == "observation"]
    assert len(obs) and obs["text"].isna().all() and obs["source"].notna().all()


def agentsnet_script(request: dict) -> Reply:
    """Valid JSON messages and final answers, except for requests whose body hashes to 0 mod 3:
    those get an invalid reply, so some first replies are retried and some retries fail."""
    messages = request["messages"]
    last = messages[-1]["content"]
    bad = int(hashlib.sha256(json.dumps(messages).encode()).hexdigest(), 16) % 3 == 0
    final = "### Final Answer ###" in last or "final answer" in last
    if bad:
        return Reply("I would rather not say." if not final else "### Final Answer ### purple-ish")
    if final:
        asked = next(m["content"] for m in reversed(messages) if "nothing else:" in m["content"])
        return Reply("### Final Answer ### " + asked.rsplit("nothing else: ", 1)[1].split(", ")[0].strip())
    return Reply('{}')


def test_agentsnet_with_validator_retries_rebuilds_exactly(tmp_path: Path) -> None:
    _, requests = run(tmp_path, agentsnet_script, task="agentsnet/coloring", protocol="local", graph="ws",
                      agents=4, seed=5, agentsnet={"rounds": 3})
    events = assert_rebuilt_equals_sent(tmp_path, requests)
    runs = read_table(tmp_path, "runs").iloc[0]
    retries = events[events["verb"] == "retry"]
    assert runs["fallbacks"] > 0 and runs["failed_parses"] > 0 and len(retries) == runs["fallbacks"]
    assert set(events.loc[events["kind"] == "delivery", "seq"]) <= set(events["source"].dropna().astype(int))
    # the protocol's opening message has no event of its own: its observation carries the text
    opening = events[(events["kind"] == "observation") & (events["round"] == 1) & (events["verb"] != "retry")]
    assert len(opening) == 4 and opening["text"].notna().all()


def silo_script(request: dict) -> Reply:
    plan = [fenced("broadcast_message hello", "receive_messages"), "no command this time", fenced("submit_result 7")]
    return Reply(plan[min(turn(request), len(plan) - 1)])


def test_silo_rebuilds_exactly(tmp_path: Path) -> None:
    _, requests = run(tmp_path, silo_script, task="silo/I-01", protocol="broadcast", agents=3, seed=2)
    events = assert_rebuilt_equals_sent(tmp_path, requests)
    assert {"command", "harness"} <= set(events["kind"])
