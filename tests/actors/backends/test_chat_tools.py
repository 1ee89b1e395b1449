"""Tool calls through a real chat server on loopback, for the openai client (aiohttp and
httpx transports), the direct aiohttp client, and the fenced text mode: what goes out in
the request, and what a well-formed call, malformed arguments, an unknown tool, a call
whose arguments are not an object, plain text and several calls in one reply become."""

from __future__ import annotations

import asyncio
import json

import pytest

from masgrid._private.actors.backends import BackendSettings, ClientCache
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.actors.backends.chat_tools import FencedTools, fenced_result
from masgrid._private.envs.tokens import approx_tokens
from tests.support.chat_server import ChatServer, Reply, tool_call
from tests.support.tool_specs import TOOLS, block

NATIVE_CLIENTS = ["aiohttp", "httpx", "direct"]
FENCED_CLIENTS = ["aiohttp", "direct"]
MESSAGES = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."}]


def settings(base_url: str, client: str, mode: str = "native") -> BackendSettings:
    return BackendSettings(name="m", base_url=base_url, timeout_s=5, max_retries=0, http_client=client,
                           tool_mode=mode)


async def complete(cfg: BackendSettings, messages=MESSAGES, tools=TOOLS):
    clients = ClientCache()
    backend = http_backend(cfg, approx_tokens, clients)
    if cfg.tool_mode == "fenced":
        backend = FencedTools(backend)
    try:
        return await backend.complete(messages, tools)
    finally:
        await clients.aclose()


def native(reply: Reply, client: str, **kwargs):
    with ChatServer(lambda request: reply) as server:
        done = asyncio.run(complete(settings(server.base_url, client), **kwargs))
        return done, server.requests


def fenced(text: str, client: str, **kwargs):
    with ChatServer(lambda request: Reply(text)) as server:
        done = asyncio.run(complete(settings(server.base_url, client, "fenced"), **kwargs))
        return done, server.requests


# --- native mode ----------------------------------------------------------------------


@pytest.mark.parametrize("client", NATIVE_CLIENTS)
def test_a_well_formed_call_and_the_request_that_offered_it(client):
    done, (request,) = native(Reply(tool_calls=[tool_call("view", '{"path": "src/app.py"}', id="call_abc")]), client)
    assert request["tools"] == TOOLS and request["messages"] == MESSAGES
    assert done.error is None and done.text == "" and done.finish_reason == "tool_calls"
    (call,) = done.tool_calls
    assert call.model_dump() == {"id": "call_abc", "name": "view", "arguments": {"path": "src/app.py"},
                                 "raw_arguments": '{"path": "src/app.py"}', "error": None}
    assert done.usage_source == "server" and done.tokens_out > 0


@pytest.mark.parametrize("client", NATIVE_CLIENTS)
def test_malformed_arguments_unknown_tool_and_non_object_are_call_errors(client):
    calls = [tool_call("bash", '{"command": "ls -la', id="a"),  # cut off: not JSON
             tool_call("rm_rf", '{"path": "/"}', id="b"),  # nobody offered it
             tool_call("view", '["src/app.py"]', id="c"),  # JSON, but not an object
             tool_call("view", {"path": "x.py"}, id="d")]  # an object instead of a string: accepted
    done, _ = native(Reply("Let me look.", tool_calls=calls), client)
    assert done.error is None and done.text == "Let me look."
    bad_json, unknown, not_object, as_object = done.tool_calls
    assert "not valid JSON" in bad_json.error and bad_json.arguments is None
    assert bad_json.raw_arguments == '{"command": "ls -la' and bad_json.name == "bash"
    assert unknown.error.startswith("unknown tool 'rm_rf' (tools offered: bash, finish, view)")
    assert unknown.arguments is None and unknown.raw_arguments == '{"path": "/"}'
    assert "must be a JSON object, got list" in not_object.error and not_object.arguments is None
    assert as_object.error is None and as_object.arguments == {"path": "x.py"}
    assert [c.id for c in done.tool_calls] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("client", NATIVE_CLIENTS)
def test_text_instead_of_a_tool_call_is_returned_as_text(client):
    done, (request,) = native(Reply("I would rather explain the fix in words."), client)
    assert request["tools"] == TOOLS
    assert done.error is None and done.tool_calls is None and done.text == "I would rather explain the fix in words."


@pytest.mark.parametrize("client", NATIVE_CLIENTS)
def test_several_calls_in_one_reply_keep_their_order_and_get_ids(client):
    calls = [tool_call("view", {"path": "a.py"}), tool_call("bash", '{"command": "pytest -q"}'),
             tool_call("finish", '{"summary": "done"}')]
    history = MESSAGES + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "go on"}]
    done, _ = native(Reply(tool_calls=calls), client, messages=history)
    assert [(c.name, c.arguments) for c in done.tool_calls] == [
        ("view", {"path": "a.py"}), ("bash", {"command": "pytest -q"}), ("finish", {"summary": "done"})]
    # the server sent no ids: ours name the turn (one assistant turn before) and the position
    assert [c.id for c in done.tool_calls] == ["call_1_0", "call_1_1", "call_1_2"]
    assert all(c.error is None for c in done.tool_calls)


@pytest.mark.parametrize("client", ["aiohttp", "direct"])
def test_tool_calls_that_are_not_a_list_or_not_calls_are_recorded_not_raised(client):
    body = {"choices": [{"message": {"content": None, "tool_calls": {"name": "view"}}, "finish_reason": "stop"}]}
    done, _ = native(Reply(body=body), client)
    assert done.error_class == "malformed_response" and "tool_calls is a dict, not a list" in done.error
    odd = [{"id": "q", "type": "function"}, "view", tool_call("view", None, id="r")]
    done, _ = native(Reply(tool_calls=odd), client)
    missing_function, a_string, no_arguments = done.tool_calls
    assert "no function name" in missing_function.error and missing_function.id == "q"
    assert "no function name" in a_string.error and a_string.id == "call_0_1"
    assert no_arguments.error is None and no_arguments.arguments == {}  # no arguments: {}


@pytest.mark.parametrize("client", ["aiohttp", "direct"])
def test_usage_estimated_without_server_usage_counts_calls_and_tools(client):
    reply = Reply(tool_calls=[tool_call("view", '{"path": "a.py"}', id="k")], usage=False)
    history = MESSAGES + [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "k0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "k0", "content": "a.py b.py"}]
    done, _ = native(reply, client, messages=history)
    assert done.usage_source == "estimate"
    # an independent sum: every text that went out, the call it made, and the tool specs
    sent = ["You are a coding agent.", "Fix the bug.", "\nbash {\"command\": \"ls\"}", "a.py b.py"]
    assert done.tokens_in == sum(approx_tokens(t) for t in sent) + approx_tokens(json.dumps(TOOLS, sort_keys=True))
    assert done.tokens_out == approx_tokens('```tool\n{"name": "view", "arguments": {"path": "a.py"}}\n```')


# --- fenced mode ----------------------------------------------------------------------


@pytest.mark.parametrize("client", FENCED_CLIENTS)
def test_fenced_request_describes_the_tools_in_the_system_message(client):
    done, (request,) = fenced("Reading first.\n" + block("view", {"path": "src/app.py"}), client)
    assert "tools" not in request
    system, user = request["messages"]
    assert system["content"].startswith("You are a coding agent.\n\n# Tools\n")
    for spec in TOOLS:
        name = spec["function"]["name"]
        assert f"## {name}\n{spec['function']['description']}" in system["content"]
        assert json.dumps(spec["function"]["parameters"], sort_keys=True) in system["content"]
    assert user == MESSAGES[1]
    (call,) = done.tool_calls
    assert (call.name, call.arguments, call.error, call.id) == ("view", {"path": "src/app.py"}, None, "call_0_0")
    assert done.text.startswith("Reading first.\n```tool")  # the whole reply, as the model wrote it


@pytest.mark.parametrize("client", FENCED_CLIENTS)
def test_fenced_malformed_unknown_not_object_and_several(client):
    text = "\n".join(["Three things.", block("bash", '{"command": "ls'), block("deploy", {"env": "prod"}),
                      block("view", '"src/app.py"'), block("finish", {"summary": "ok"})])
    done, _ = fenced(text, client)
    broken, unknown, not_object, good = done.tool_calls
    assert "not valid JSON" in broken.error and broken.name == "bash" and broken.arguments is None
    assert unknown.error.startswith("unknown tool 'deploy'")
    assert "must be a JSON object, got str" in not_object.error
    assert good.error is None and good.arguments == {"summary": "ok"}
    assert [c.id for c in done.tool_calls] == [f"call_0_{k}" for k in range(4)]


@pytest.mark.parametrize("client", FENCED_CLIENTS)
def test_fenced_text_without_a_block_is_text(client):
    done, _ = fenced("I need to think about this. ```python\nprint(1)\n```", client)
    assert done.error is None and done.tool_calls is None and done.text.startswith("I need to think")


@pytest.mark.parametrize("client", FENCED_CLIENTS)
def test_fenced_history_sends_calls_as_blocks_and_results_as_user_messages(client):
    history = MESSAGES + [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_0_0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "call_0_0", "content": "a.py"},
        {"role": "assistant", "content": "Now the file.\n" + block("view", {"path": "a.py"}), "tool_calls": [
            {"id": "call_1_0", "type": "function", "function": {"name": "view", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_1_0", "content": "1: x = 1"}]
    done, (request,) = fenced("Done.", client, messages=history)
    sent = request["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(set(m) == {"role", "content"} for m in sent)  # nothing a plain chat server would refuse
    assert sent[2]["content"] == block("bash", {"command": "ls"})
    assert sent[3]["content"] == "Result of tool call call_0_0 (bash):\na.py"
    assert sent[4]["content"] == history[4]["content"]  # a fenced reply goes back exactly as written
    assert sent[5]["content"] == "Result of tool call call_1_0 (view):\n1: x = 1"
    # what the CPU stand-in hands its policy: the result without its header
    assert fenced_result(sent[3]["content"]) == "a.py" and fenced_result(sent[5]["content"]) == "1: x = 1"
    assert fenced_result("Result of tool call, but not one") is None and fenced_result("a.py") is None
    assert done.tool_calls is None and done.text == "Done."
