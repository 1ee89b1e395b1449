"""Acceptance: a misbehaving OpenAI-compatible server on loopback. The run completes, each
failure shows up as the specified harness reply in the events table, metrics are
computed and the Parquet dataset reads back."""

import json
from collections import Counter

import pandas as pd
import pytest

from masgrid._private.analysis.transcript import calls as rebuilt_calls
from masgrid._private.envs.harness import MSG_MODEL_ERROR, MSG_NO_COMMANDS
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.support.chat_server import ChatServer, Reply, agent_and_turn

SEED = 7


def fenced(*commands: str, tag: str = "") -> str:
    return "\n".join(f"```{tag}\n{c}\n```" for c in commands)


def make_script(expected):
    def answer(agent: int) -> str:
        return "[" + ", ".join(map(str, expected[agent])) + "]"

    plan0 = [
        Reply("I am thinking about the task, no command yet."),  # no fences
        Reply(status=500),  # HTTP 500 on every attempt
        Reply(fenced("fly_away now")),  # unknown verb
        Reply(hang_s=5.0),  # hangs past the 2 s timeout
        Reply(fenced("submit_result [1, 2, 3]", tag="python")),  # wrong length
        Reply(fenced("submit_result [seven, 8]")),  # non-integers
        Reply(""),  # empty reply
        Reply("```\nbroadcast_message never closed"),  # malformed fence
        Reply("Sharing and reading.\n" + fenced("broadcast_message Agent-0 holds data", "receive_messages")),
        Reply(fenced(f"submit_result {answer(0)}")),
    ]

    def script(request: dict) -> Reply:
        if request.get("max_tokens") == 1:  # masgrid's probe after the failed calls (platform/cluster/engine_alive.py)
            return Reply("ok")
        agent, turn = agent_and_turn(request)
        if agent == 0:
            return plan0[min(turn, len(plan0) - 1)]
        if turn == 0:
            return Reply(fenced("receive_messages"), usage=False)  # no usage: estimated
        return Reply(fenced(f"submit_result {answer(1)}"))

    return script


@pytest.mark.parametrize(("executor", "http_client"), [("local", "aiohttp"), ("local", "httpx"), ("local", "direct"), ("local", "lean"),
                                                       ("ray", "aiohttp"), ("ray", "direct")])
def test_bad_model_outputs_are_survived_and_recorded(tmp_path, executor, http_client, request):
    if executor == "ray":
        request.getfixturevalue("ray_session")
    instance = get_task("sorting").generate(2, 2, SEED, mode="random")
    with ChatServer(make_script(instance.expected)) as server:
        cfg = RunConfig.from_mapping(dict(
            task="sorting", protocol="broadcast", agents=2, k=2, mode="random", seed=SEED, backend="openai",
            model={"name": "chaos", "base_url": server.base_url, "timeout_s": 2.0, "max_retries": 1,
                   "http_client": http_client},
            results_dir=str(tmp_path), execution={"executor": executor}, validity={"max_model_error_rate": 0.5}))
        summary = run_one(cfg)
        statuses = [r for r in server.requests if r.get("max_tokens") != 1]  # the agents' requests
    assert summary.status == "degraded", summary.error  # 2 failed calls, under the 0.5 limit set above
    assert summary.success is True  # agent 0 finally submits the right block

    events = pd.read_parquet(tmp_path / "events")
    e0 = events[events["agent"] == 0].sort_values("seq")
    replies = e0[e0["kind"].isin(["command", "harness"])]["reply"].tolist()
    assert replies[:8] == [
        MSG_NO_COMMANDS,
        MSG_MODEL_ERROR,
        "Unknown command: fly_away",
        MSG_MODEL_ERROR,
        "submit_result -> error: expected exactly 2 integers, got 3",
        "submit_result -> error: expected integers only, got 'seven'",
        MSG_NO_COMMANDS,
        MSG_NO_COMMANDS,
    ]
    calls = e0[e0["kind"] == "model_call"]
    failed = calls[~calls["ok"]]
    assert len(failed) == 2
    assert sorted(failed["error_class"]) == ["http_5xx", "timeout"]
    assert (failed["tokens_in"] == 0).all() and (failed["usage_source"] == "none").all()
    assert (failed["attempts"] == 2).all()
    # 500 and hang were retried: the server saw two requests for each of those turns
    assert len(statuses) >= len(calls) + 2

    runs = pd.read_parquet(tmp_path / "runs")
    (run,) = runs.to_dict("records")
    assert run["model_errors"] == 2 and run["command_errors"] == 3 and run["status"] == "degraded"
    assert run["model_error_rate"] == 2 / run["model_calls"]
    assert json.loads(run["model_error_classes"]) == {"http_5xx": 1, "timeout": 1}
    assert run["rounds"] == 10 and run["sr"] == 1.0 and run["te"] > 0 and 0 < run["cr"] < 1
    agents = pd.read_parquet(tmp_path / "agents").sort_values("agent")
    assert agents["model_errors"].tolist() == [2, 0]
    assert agents["correct"].tolist() == [True, True]
    usage_sources = set(events[events["kind"] == "model_call"]["usage_source"].dropna())
    assert usage_sources == {"server", "estimate", "none"}  # none: the two failed calls
    assert run["calls_usage_estimated"] == 1
    # The audit trail through failures: each call's rebuilt input is what the server got, once per attempt.
    attempts = dict(zip(events["seq"], events["attempts"]))
    rebuilt = Counter()
    for call in rebuilt_calls(events):
        rebuilt[json.dumps(call.messages)] += int(attempts[call.reply.seq])
    assert rebuilt == Counter(json.dumps(r["messages"]) for r in statuses)
