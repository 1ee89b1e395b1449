"""A provider's content filter in a whole run: the model's answer, counted, never a platform
failure. One run in one process (execution.executor=local) against a loopback server whose
script says, call by call, what the filter did; the expected counts come from that script."""

from __future__ import annotations

import json

import pandas as pd

from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from tests.support.chat_server import ChatServer, Reply, agent_and_turn

SEED = 3
AZURE_FILTER = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's "
                                     "content management policy.", "code": "content_filter", "status": 400,
                          "innererror": {"code": "ResponsibleAIPolicyViolation"}}}
STOPPED = {"id": "x", "object": "chat.completion", "model": "loopback",
           "usage": {"prompt_tokens": 20, "completion_tokens": 0, "total_tokens": 20},
           "choices": [{"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant",
                                                                                   "content": None}}]}


def test_filtered_calls_are_counted_and_the_agent_goes_on(tmp_path):
    expected = get_task("sorting").generate(2, 2, SEED, mode="random").expected
    calls = {0: 0, 1: 0}

    def script(request: dict) -> Reply:
        agent, _ = agent_and_turn(request)
        calls[agent] += 1
        if agent == 1 and calls[1] == 1:
            return Reply(status=400, body=AZURE_FILTER)  # the prompt refused
        if agent == 1 and calls[1] == 2:
            return Reply(body=STOPPED)  # the reply stopped by the filter, nothing of it sent
        if calls[agent] < 3:
            return Reply("```\nwait\n```")
        return Reply(f"```\nsubmit_result {json.dumps(expected[agent])}\n```")

    with ChatServer(script) as server:
        summary = run_local(RunConfig.from_mapping(dict(
            task="sorting", protocol="broadcast", agents=2, k=2, mode="random", seed=SEED, backend="openai",
            max_rounds=6, results_dir=str(tmp_path), preflight=False, execution={"executor": "local"},
            model={"name": "loopback", "base_url": server.base_url, "timeout_s": 5.0, "max_retries": 2})))
    assert calls == {0: 3, 1: 3}  # the refused agent was called again, and the refusal was never retried
    assert summary.status == "ok", summary.error
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert run["status"] == "ok" and run["success"]  # both agents submitted the right answer
    assert run["model_calls"] == 6 and run["model_errors"] == 1 and run["agents_stopped"] == 0
    assert json.loads(run["model_error_classes"]) == {"content_filter": 1}
    assert run["content_filtered"] == 2  # one prompt refused, one reply stopped
    model_calls = pd.read_parquet(tmp_path / "events").query("kind == 'model_call' and agent == 1").sort_values("seq")
    first, second = model_calls.iloc[0], model_calls.iloc[1]
    assert first["error_class"] == "content_filter" and first["http_status"] == 400 and not first["ok"]
    assert "content management policy" in first["error"]
    assert second["ok"] and second["text"] == "" and second["finish_reason"] == "content_filter"
    assert second["tokens_in"] == 20 and second["tokens_out"] == 0 and second["usage_source"] == "server"
    assert model_calls.iloc[2]["finish_reason"] == "stop"
