"""A scripted policy that calls tools: through the scripted backend, and through the CPU
stand-in served over real HTTP on loopback (native `tool_calls` when the request offers
tools, ```tool blocks in fenced mode). The three paths give the same calls and the same
token counts."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from masgrid._private.actors.backends import BackendSettings, ClientCache
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.actors.backends.scripted import ScriptedBackend
from masgrid._private.actors.backends.chat_tools import FencedTools, assistant_turn
from masgrid._private.actors.serving.handle_backend import HandleChatBackend
from masgrid._private.actors.serving.spec import parse_serving
from masgrid._private.actors.serving.standin import AGENT_FIELD, AgentTag, StandinCore, build_app
from masgrid._private.envs.policies import ScriptedPolicy
from masgrid._private.envs.tasks import get_task
from masgrid.families.masbench.tasks import SortingTask
from masgrid._private.envs.tokens import approx_tokens
from masgrid._private.envs.tool_calls import ToolCall, ToolReply
from tests.support.tool_specs import TOOLS


class ToolPolicy(ScriptedPolicy):
    """Views a file, then runs a command, calls an unknown tool and passes a non-object,
    then reports what it saw."""

    def __init__(self, view, protocol, seed=0):
        super().__init__(view, protocol, seed)
        self.turn = 0

    def act(self, observations: list[str]) -> str | ToolReply:
        self.turn += 1
        if self.turn == 1:
            return ToolReply(text="Reading.", tool_calls=[ToolCall.of("view", {"path": f"a{self.view.agent}.py"})])
        if self.turn == 2:
            return ToolReply(tool_calls=[ToolCall.of("bash", {"command": f"echo {len(observations)}"}),
                                         ToolCall.of("deploy", {}), ToolCall.of("view", ["a.py"])])
        return "saw: " + " | ".join(observations)


@pytest.fixture
def tool_policy(monkeypatch) -> None:
    monkeypatch.setattr(SortingTask, "scripted_policy", lambda self, view, protocol, seed: ToolPolicy(view, protocol))


@pytest.fixture
def standin_url(tool_policy) -> Iterator[str]:
    """The stand-in's FastAPI app under uvicorn in a thread of this process (which sees the
    patched policy)."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(StandinCore()), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(5)


def view():
    task = get_task("sorting")
    return task.view(task.generate(2, 2, 1, mode="random"), 0)


TOOL_RESULTS = [[{"role": "tool", "tool_call_id": "call_0_0", "content": "1: x = 1"}],
                [{"role": "tool", "tool_call_id": "call_1_0", "content": "1"},
                 {"role": "tool", "tool_call_id": "call_1_1", "content": "error: unknown tool"},
                 {"role": "tool", "tool_call_id": "call_1_2", "content": "error: not an object"}]]


async def three_turns(backend, tools=TOOLS):
    """The policy's three replies, the tool results fed back as a scheduler would."""
    history = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Go."}]
    out = []
    for k in range(3):
        done = await backend.complete(list(history), tools)
        out.append(done)
        history.append(assistant_turn(done))
        history.extend(TOOL_RESULTS[k] if k < 2 else [])
    return out, history


def test_the_scripted_backend_returns_checked_calls_and_feeds_results_back(tool_policy):
    backend = ScriptedBackend(get_task("sorting").scripted_policy(view(), "broadcast", 0), approx_tokens)
    (first, second, third), history = asyncio.run(three_turns(backend))
    (call,) = first.tool_calls
    assert first.text == "Reading." and (call.id, call.name, call.arguments) == ("call_0_0", "view", {"path": "a0.py"})
    bash, deploy, not_object = second.tool_calls
    assert bash.error is None and bash.arguments == {"command": "echo 1"}  # it saw one tool result
    assert deploy.error.startswith("unknown tool 'deploy'") and "must be a JSON object" in not_object.error
    assert [c.id for c in second.tool_calls] == ["call_1_0", "call_1_1", "call_1_2"]
    assert third.tool_calls is None and third.text == "saw: 1 | error: unknown tool | error: not an object"
    # usage estimated the way a server bills it: every message, the calls made, the tool specs
    before_third = history[:-1]
    texts = ["You are a coding agent.", "Go.", "Reading.\nview " + json.dumps({"path": "a0.py"}), "1: x = 1",
             "\nbash " + json.dumps({"command": "echo 1"}) + "\ndeploy {}\nview {}",  # a non-object replays as {}
             "1", "error: unknown tool", "error: not an object"]
    assert len(before_third) == len(texts)
    assert third.tokens_in == sum(approx_tokens(t) for t in texts) + approx_tokens(json.dumps(TOOLS, sort_keys=True))


@pytest.mark.parametrize("mode", ["native", "fenced"])
def test_the_stand_in_over_http_answers_as_the_scripted_backend(standin_url, mode):
    tag = AgentTag(view=view(), protocol="broadcast", seed=0).model_dump(mode="json")
    cfg = BackendSettings(name="masgrid-standin", base_url=standin_url, http_client="direct", max_retries=0,
                          extra_body={AGENT_FIELD: tag}, tool_mode=mode)

    async def over_http():
        clients = ClientCache()
        backend = http_backend(cfg, approx_tokens, clients)
        try:
            return await three_turns(FencedTools(backend) if mode == "fenced" else backend)
        finally:
            await clients.aclose()

    served, _ = asyncio.run(over_http())
    local, _ = asyncio.run(three_turns(ScriptedBackend(ToolPolicy(view(), "broadcast"), approx_tokens)))
    for got, want in zip(served, local):
        assert got.error is None and got.usage_source == "server"
        strip = {"raw_arguments"} if mode == "fenced" else set()
        assert [c.model_dump(exclude=strip) for c in got.tool_calls or []] == \
            [c.model_dump(exclude=strip) for c in want.tool_calls or []]
        if mode == "native":
            assert (got.text, got.tokens_in, got.tokens_out) == (want.text, want.tokens_in, want.tokens_out)
        else:  # the calls travel in the text, which the fenced wrapper hands back whole
            assert got.text == want.recorded_text and got.recorded_text == want.recorded_text


def test_the_serve_handle_request_offers_the_tools():
    settings = BackendSettings(name="m", serving={"kind": "standin"})
    backend = HandleChatBackend(None, settings, parse_serving(settings.serving), approx_tokens, tag={"x": 1})
    body = backend._request([{"role": "user", "content": "hi"}], TOOLS)
    assert body["tools"] == TOOLS and body[AGENT_FIELD] == {"x": 1}
    assert "tools" not in backend._request([{"role": "user", "content": "hi"}], None)


class ToolStandin:
    """The stand-in's core in a Ray actor, where a Serve replica would hold it (its `chat` is
    the method HandleChatBackend calls); it plays ToolPolicy for the sorting task."""

    def __init__(self) -> None:
        SortingTask.scripted_policy = lambda self, view, protocol, seed: ToolPolicy(view, protocol)  # this worker only
        self.core = StandinCore()

    async def chat(self, body: dict) -> dict:
        return await self.core.chat(body)


def test_the_handle_backend_reads_tool_calls_from_a_stand_in_actor(ray_session):
    actor = ray_session.remote(ToolStandin).options(num_cpus=0).remote()
    try:
        settings = BackendSettings(name="masgrid-standin", serving={"kind": "standin"}, max_retries=0, timeout_s=30)
        tag = AgentTag(view=view(), protocol="broadcast", seed=0).model_dump(mode="json")
        backend = HandleChatBackend(actor, settings, parse_serving(settings.serving), approx_tokens, tag)
        served, _ = asyncio.run(three_turns(backend))
    finally:
        ray_session.kill(actor)
    local, _ = asyncio.run(three_turns(ScriptedBackend(ToolPolicy(view(), "broadcast"), approx_tokens)))
    for got, want in zip(served, local):
        assert got.error is None and got.usage_source == "server"
        assert got.tool_calls == want.tool_calls
        assert (got.text, got.tokens_in, got.tokens_out) == (want.text, want.tokens_in, want.tokens_out)
    assert served[1].tool_calls[1].error.startswith("unknown tool 'deploy'")
