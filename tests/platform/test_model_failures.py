"""Acceptance (issue 11): failed model calls are counted, classified and never scored as the model's.

Runs go through Ray against a real chat-completions server on loopback; expected counts
come from the server's own log of what it answered, not from masgrid's records.
"""

from __future__ import annotations

import json
import socket
import threading

import pandas as pd
import pytest

from masgrid._private.analysis.report import build_report
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.support.chat_server import ChatServer, Reply, agent_and_turn

SEED = 5


def fenced(command: str) -> str:
    return f"```\n{command}\n```"


def config(tmp_path, base_url: str, **extra) -> RunConfig:
    data = dict(task="sorting", protocol="broadcast", agents=2, k=2, mode="random", seed=SEED, backend="openai",
                max_rounds=8, results_dir=str(tmp_path),
                model={"name": "loopback", "base_url": base_url, "timeout_s": 5.0, "max_retries": 0})
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return RunConfig.from_mapping(data)


def expected_answers():
    return get_task("sorting").generate(2, 2, SEED, mode="random").expected


def waits_then_submits(turns_before_submit: int = 4):
    expected = expected_answers()

    def script(request: dict) -> Reply:
        agent, turn = agent_and_turn(request)
        if turn < turns_before_submit:
            return Reply(fenced("wait"))
        return Reply(fenced(f"submit_result {json.dumps(expected[agent])}"))

    return script


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_endpoint_gives_an_invalid_run_with_no_tokens_left_out_of_the_report(tmp_path, ray_session):
    cfg = config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1", max_rounds=3, preflight=False)
    (summary,) = run_many([cfg])
    assert summary.status == "invalid"
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert run["status"] == "invalid" and run["model_calls"] == 6 and run["model_errors"] == 6
    assert run["model_error_rate"] == 1.0 and json.loads(run["model_error_classes"]) == {"connection_refused": 6}
    assert run["tokens_in"] == run["tokens_out"] == run["tokens_total"] == 0
    assert pd.isna(run["te"]) and pd.isna(run["cr"])  # no tokens: no efficiency to report
    assert "connection_refused" in run["error"]
    calls = pd.read_parquet(tmp_path / "events").query("kind == 'model_call'")
    assert set(calls["error_class"]) == {"connection_refused"} and (calls["tokens_in"] == 0).all()
    assert not calls["error"].str.contains("timeout").any()

    out = tmp_path / "report"
    build_report(tmp_path, out)
    table1 = (out / "masbench" / "table1.md").read_text()
    assert "(no data)" in table1 and "1 invalid (too many failed model calls)" in table1
    assert "0 of 1 runs used" in (out / "README.md").read_text()
    assert "0 of 1 runs used" in (out / "masbench" / "README.md").read_text()


class FlakyServer:
    """Fails every fifth request with HTTP 500 and remembers what it answered."""

    def __init__(self) -> None:
        self.inner = waits_then_submits()
        self.lock = threading.Lock()
        self.requests = 0
        self.failed = 0

    def __call__(self, request: dict) -> Reply:
        with self.lock:
            self.requests += 1
            fail = self.requests % 5 == 0
            self.failed += fail
        return Reply(status=500) if fail else self.inner(request)


@pytest.mark.parametrize(("limit", "status"), [(0.3, "degraded"), (0.05, "invalid")])
def test_a_server_failing_a_fifth_of_calls_gives_the_rates_it_caused(tmp_path, ray_session, limit, status):
    flaky = FlakyServer()
    with ChatServer(flaky) as server:
        (summary,) = run_many([config(tmp_path, server.base_url, validity={"max_model_error_rate": limit},
                                      preflight=False)])
    assert summary.status == status
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert flaky.failed >= 1
    assert run["model_calls"] == flaky.requests and run["model_errors"] == flaky.failed  # max_retries=0
    assert run["model_error_rate"] == pytest.approx(flaky.failed / flaky.requests)
    assert json.loads(run["model_error_classes"]) == {"http_5xx": flaky.failed}
    agents = pd.read_parquet(tmp_path / "agents")
    assert agents["model_errors"].sum() == flaky.failed and agents["model_calls"].sum() == flaky.requests


def test_a_prompt_too_long_for_the_context_stops_that_agent_and_records_why(tmp_path, ray_session):
    inner = waits_then_submits()
    calls = {0: 0, 1: 0}

    def script(request: dict) -> Reply:
        agent, turn = agent_and_turn(request)
        calls[agent] += 1
        if agent == 1 and turn >= 2:  # agent 1's history has outgrown the context
            return Reply(status=400, body={"object": "error", "type": "BadRequestError", "code": 400,
                                           "message": "This model's maximum context length is 64 tokens."})
        return inner(request)

    with ChatServer(script) as server:
        (summary,) = run_many([config(tmp_path, server.base_url, preflight=False)])
    assert calls == {0: 5, 1: 3}  # agent 1: two answers, one refusal, then never called again
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    # the model's own limit, not a platform failure: the run stays usable and says so
    assert run["agents_stopped"] == 1 and run["submitted"] == 1 and run["status"] == "ok"
    assert run["context_overflows"] == 1 and json.loads(run["model_error_classes"]) == {"context_length": 1}
    agents = pd.read_parquet(tmp_path / "agents").sort_values("agent")
    stopped = agents["stopped"].tolist()
    assert pd.isna(stopped[0]) and "maximum context length" in stopped[1] and "round 3" in stopped[1]
    assert agents["submission"].isna().tolist() == [False, True]
    refused = pd.read_parquet(tmp_path / "events").query("kind == 'model_call' and not ok")
    assert refused["error_class"].tolist() == ["context_length"] and refused["http_status"].tolist() == [400]


def test_two_served_names_are_two_models_in_every_table(tmp_path, ray_session):
    expected = expected_answers()

    def script(request: dict) -> Reply:
        agent, _ = agent_and_turn(request)
        answer = expected[agent] if request["model"] == "good-model" else sorted(expected[agent], reverse=True)
        return Reply(fenced(f"submit_result {json.dumps(answer)}"))

    with ChatServer(script) as server:
        cfgs = [config(tmp_path, server.base_url, model={"served_name": name}, preflight=False, experiment="two",
                       tags=["x", "y"]) for name in ("good-model", "bad-model")]
        assert cfgs[0].run_id != cfgs[1].run_id
        summaries = run_many(cfgs)
    assert [s.status for s in summaries] == ["ok", "ok"]
    runs = pd.read_parquet(tmp_path / "runs")
    assert sorted(runs["model"]) == ["bad-model", "good-model"] and set(runs["model_preset"]) == {"loopback"}
    out = tmp_path / "report"
    build_report(tmp_path, out)
    table1 = pd.read_csv(out / "masbench" / "table1.csv")
    assert sorted(table1["model"]) == ["bad-model", "good-model"]
    sr = dict(zip(table1["model"], table1["broadcast / SR%"]))
    assert sr["good-model"] == 100.0 and sr["bad-model"] < 100.0
    for table in ("runs", "agents", "events"):  # the labels are on every row of every table
        frame = pd.read_parquet(tmp_path / table)
        assert set(frame["experiment"]) == {"two"} and all(list(t) == ["x", "y"] for t in frame["tags"])
