"""A CooperBench run with a model backend over real HTTP (a loopback chat server that
records every request): the tools offered per phase, tool results answering their call
ids, a teammate message arriving as a marked user message in the recipient's next request,
the plan in the execution prompt, and malformed or missing tool calls answered and counted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from masgrid._private.analysis.transcript import calls
from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import partition_dir
from tests.support.bpe import train_bpe
from tests.support.chat_server import ChatServer, Reply, tool_call

SANDBOX = "bwrap" if sandbox_problem() is None else "none"


#: the one message of the coop script, as the server sends its arguments (a JSON string)
SEND_ARGS = json.dumps({"to": "agent_2", "content": "I own core.py 1-9"})


class Script:
    """Planning: agent_1 messages agent_2 and finishes; agent_2 views until that message has
    arrived, then finishes. Execution: view, a call with broken JSON, a reply without a tool
    call, finish."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, int, dict]] = []

    def __call__(self, request: dict) -> Reply:
        messages = request["messages"]
        system = messages[0]["content"]
        name = system.split("you are ")[1].split(",")[0]
        planning = "This is the planning phase" in system
        self.requests.append((name, 1 if planning else 2, request))
        turn = sum(m["role"] == "assistant" for m in messages)
        if planning:
            if name == "agent_1":
                if turn == 0:
                    return Reply(tool_calls=[tool_call("send_message", SEND_ARGS)])
                return Reply(tool_calls=[tool_call("finish", {"status": "done", "summary": f"plan of {name}"})])
            heard = any(m["role"] == "user" and m["content"].startswith("[Message from agent_1]") for m in messages)
            if heard or turn >= 10:
                return Reply(tool_calls=[tool_call("finish", {"status": "done", "summary": f"plan of {name}"})])
            return Reply(tool_calls=[tool_call("view", {"path": "textkit/core.py"})])
        if turn == 0:
            return Reply(tool_calls=[tool_call("view", {"path": "textkit/core.py", "view_range": [1, 3]})])
        if turn == 1:
            return Reply(tool_calls=[tool_call("str_replace", "{not json")])
        if turn == 2:
            return Reply(text="I think I am done.")
        return Reply(tool_calls=[tool_call("finish", {"status": "partial", "summary": "nothing changed"})])


def test_cooper_run_through_a_chat_server(tmp_path: Path, cooper_cache: Path) -> None:
    from tokenizers import Tokenizer

    pool = write_synthetic_pool(tmp_path / "pool")
    script = Script()
    tokenizer = train_bpe(tmp_path / "tokenizer.json")
    with ChatServer(script) as server:
        cfg = RunConfig.from_mapping({
            "task": f"cooper/{pool.pool}/{pool.task_id}", "protocol": "workspace", "results_dir": str(tmp_path / "r"),
            "backend": "openai", "model": {"name": "test", "base_url": server.base_url, "max_retries": 0,
                                           "tokenizer": f"hf:{tokenizer}"},
            "preflight": False,
            "cooper": {"features": [1, 3], "data_dir": str(pool.data_dir), "repos_dir": str(pool.repos_dir),
                       "cache_dir": str(cooper_cache), "sandbox": SANDBOX},
            "execution": {"executor": "local"}})
        summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    row = pq.read_table(partition_dir(tmp_path / "r", "runs", cfg.partition) / f"part-{cfg.run_id}.parquet").to_pylist()[0]
    # tools per phase, as OpenAI function tools
    for name, phase, request in script.requests:
        offered = [t["function"]["name"] for t in request["tools"]]
        assert offered == (["view", "send_message", "finish"] if phase == 1 else
                           ["view", "create_file", "str_replace", "insert", "bash", "send_message", "finish"])
    # every tool message answers a call id of the assistant turn before it
    for _, _, request in script.requests:
        open_ids: set[str] = set()
        for m in request["messages"]:
            if m["role"] == "assistant":
                open_ids = {c["id"] for c in m.get("tool_calls") or []}
            elif m["role"] == "tool":
                assert m["tool_call_id"] in open_ids
    # the message reached agent_2 marked as a teammate's; the plans reached the execution prompts
    agent2 = [r for n, p, r in script.requests if n == "agent_2" and p == 1]
    assert any(m["content"] == "[Message from agent_1] I own core.py 1-9" for m in agent2[-1]["messages"])
    for name in ("agent_1", "agent_2"):
        system = next(r for n, p, r in script.requests if n == name and p == 2)["messages"][0]["content"]
        assert f"plan of {name}" in system
    # execution: view shows numbered lines, broken JSON and a text-only reply are answered and counted
    last = [r for n, p, r in script.requests if n == "agent_1" and p == 2][-1]["messages"]
    tool_texts = [m["content"] for m in last if m["role"] == "tool"]
    base = subprocess.run(["git", "-C", str(pool.repos_dir / "textkit"), "show", f"{pool.base_commit}:textkit/core.py"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    shown = tool_texts[0]
    assert all(line.strip() in shown for line in base[:3] if line.strip())
    assert base[3].strip() == "" or base[3].strip() not in shown
    assert "json" in tool_texts[1].lower()
    assert last[-1]["role"] == "user" and "called no tool" in last[-1]["content"]
    assert row["actions_total"] == 8 and row["messages_total"] == 0 and row["patch_lines"] == 0
    assert row["success"] is False and row["model_calls"] == len(script.requests)
    assert row["merge_stage"] == "naive" and json.loads(row["feature_pass_json"]) == {"1": False, "3": False}
    # communication tokens, in the model's tokenizer, counted here from what went over the wire:
    # the call as the model wrote it, the tool result agent_1 read, the message agent_2 read
    tok = Tokenizer.from_file(str(tokenizer))

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    after_send = [r for n, p, r in script.requests if n == "agent_1" and p == 1][1]["messages"]
    (result,) = [m["content"] for m in after_send if m["role"] == "tool"]
    delivered = "[Message from agent_1] I own core.py 1-9"
    expected = count("send_message") + count(SEND_ARGS) + count(result) + count(delivered)
    assert row["token_counter"] == f"hf:{tokenizer}"
    assert row["tokens_comm"] == row["tokens_comm_phase1"] == expected and row["tokens_comm_phase2"] == 0
    # the events alone rebuild every request's messages exactly, tool calls and their ids included
    events = pd.read_parquet(tmp_path / "r" / "events")
    rebuilt = {}
    for call in calls(events):
        rebuilt.setdefault((f"agent_{call.reply.agent + 1}", call.reply.phase), []).append(call.messages)
    sent = {}
    for name, phase, request in script.requests:
        sent.setdefault((name, phase), []).append(request["messages"])
    assert rebuilt == sent


class Chatty(Script):
    """Every agent tries to message a teammate first in each phase, then finishes."""

    def __call__(self, request: dict) -> Reply:
        messages = request["messages"]
        name = messages[0]["content"].split("you are ")[1].split(",")[0]
        self.requests.append((name, 1 if "This is the planning phase" in messages[0]["content"] else 2, request))
        if not any(m["role"] == "assistant" for m in messages):
            return Reply(tool_calls=[tool_call("send_message", json.dumps({"to": "all", "content": "hello team"}))])
        return Reply(tool_calls=[tool_call("finish", {"status": "done", "summary": "ok"})])


@pytest.mark.parametrize("setting", ["nocomm", "solo"])
def test_no_messaging_where_the_setting_has_none(tmp_path: Path, setting: str, cooper_cache: Path) -> None:
    """nocomm: planning talks, execution offers no send_message and refuses one; solo: never."""
    import pandas as pd

    from masgrid.families.cooper.prompts import render

    pool = write_synthetic_pool(tmp_path / "pool")
    script = Chatty()
    with ChatServer(script) as server:
        cfg = RunConfig.from_mapping({
            "task": f"cooper/{pool.pool}/{pool.task_id}", "protocol": "workspace", "results_dir": str(tmp_path / "r"),
            "backend": "openai", "model": {"name": "test", "base_url": server.base_url, "max_retries": 0},
            "preflight": False,
            "cooper": {"features": [1, 3], "setting": setting, "data_dir": str(pool.data_dir),
                       "repos_dir": str(pool.repos_dir), "cache_dir": str(cooper_cache), "sandbox": SANDBOX},
            "execution": {"executor": "local"}})
        assert run_local(cfg).status == "ok"
    silent = {2} if setting == "nocomm" else {1, 2}
    for _, phase, request in script.requests:
        offered = [t["function"]["name"] for t in request["tools"]]
        assert ("send_message" in offered) == (phase not in silent)
    events = pd.read_parquet(partition_dir(tmp_path / "r", "events", cfg.partition))
    for phase in (1, 2):
        e = events[events.phase == phase]
        sent = e[(e.kind == "tool_result") & (e.tool == "send_message")]
        assert len(sent) == cfg.agents  # every agent tried once
        if phase in silent:
            assert not e.kind.isin(["message", "delivery"]).any()
            # refused, by the client's check against the offered tools (or the scheduler's own note)
            assert not sent.ok.any()
            assert all("send_message" in r and ("unknown tool" in r or r == render("no_messaging")) for r in sent.reply)
        else:
            assert (e.kind == "message").sum() == cfg.agents
    row = pq.read_table(partition_dir(tmp_path / "r", "runs", cfg.partition) / f"part-{cfg.run_id}.parquet").to_pylist()[0]
    assert row["messages_total"] == 0
