"""Issue 12, case 3: a hostile reply cannot erase a run's record.

Each case drives a real run against a loopback server scripted to misbehave in one way;
the run must complete, keep every event, and show the misbehaviour on that call only.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from masgrid._private.platform.results.sanitize import to_table
from tests.support.chat_server import ChatServer, Reply

SURROGATE = "```\nbroadcast_message hi \ud800 there\n```"


def body(text: str, usage: dict | None = None) -> dict:
    return {"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": usage or {"prompt_tokens": 5, "completion_tokens": 3}}


def run(tmp_path, script, **task) -> tuple:
    task = task or dict(task="sorting", agents=2, k=2)
    with ChatServer(script) as server:
        cfg = RunConfig.from_mapping(dict(**task, backend="openai", max_rounds=2, results_dir=str(tmp_path),
                                          preflight=False, execution={"executor": "local"},
                                          model={"name": "h", "base_url": server.base_url, "max_retries": 0}))
        summary = run_one(cfg)
        requests = len(server.requests)
    return summary, pd.read_parquet(tmp_path / "events"), requests


def test_a_lone_surrogate_is_recorded_escaped_and_the_run_goes_on(tmp_path):
    summary, events, requests = run(tmp_path, lambda request: Reply(body=body(SURROGATE)))
    assert summary.status == "ok", summary.error
    calls = events[events["kind"] == "model_call"]
    assert len(calls) == requests == 4 and calls["ok"].all()  # the history replayed it without error
    assert (calls["text"] == "```\nbroadcast_message hi \\ud800 there\n```").all()


def test_absurd_usage_is_counted_locally_and_flagged(tmp_path):
    usage = {"prompt_tokens": 1e20, "completion_tokens": -3}
    summary, events, _ = run(tmp_path, lambda request: Reply(body=body("```\nwait\n```", usage)))
    assert summary.status == "ok"
    calls = events[events["kind"] == "model_call"]
    assert set(calls["usage_source"]) == {"invalid"} and (calls["tokens_in"] < 10_000).all()
    runs = pd.read_parquet(tmp_path / "runs")
    assert runs["calls_usage_estimated"].iloc[0] == 4


def test_deeply_nested_json_in_agentsnet_is_a_format_error_not_a_crash(tmp_path):
    nested = '{"a":' * 5000 + "1" + "}" * 5000
    summary, events, requests = run(tmp_path, lambda request: Reply(nested), task="agentsnet/coloring",
                                    protocol="local", graph="ws", agents=4, mode=None)
    assert summary.status == "ok", summary.error
    calls = events[events["kind"] == "model_call"]
    assert len(calls) == requests  # every call, the retries included, is recorded
    retries = calls[calls["verb"] == "invalid_reply"]
    messages = retries[retries["round"] < retries["round"].max()]  # the last call asks for the final answer
    assert len(messages) == 4 * (retries["round"].max() - 1)
    assert messages["reply"].str.contains("nested too deeply").all()


def test_one_value_that_does_not_fit_nulls_that_value_only():
    schema = pa.schema([("seq", pa.int64()), ("text", pa.string()), ("tokens_in", pa.int64()), ("error", pa.string())])
    rows = [{"seq": 0, "text": "fine", "tokens_in": 3}, {"seq": 1, "text": "big \udc80", "tokens_in": 10**30},
            {"seq": 2, "text": "also fine", "tokens_in": 4, "error": "timeout"}]
    table = to_table(rows, schema).to_pylist()
    assert [r["seq"] for r in table] == [0, 1, 2] and table[1]["tokens_in"] is None
    assert table[1]["text"] == "big \\udc80" and "tokens_in (OverflowError)" in table[1]["error"]
    assert table[0]["error"] is None and table[2] == rows[2]
