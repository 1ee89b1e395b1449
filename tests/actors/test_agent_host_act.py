"""AgentHost.act, the tool-loop step of the asynchronous schedule, against a real chat
server on loopback: the history it keeps (OpenAI format, replayable), concurrency across
agents, order within one agent, the fenced mode chosen by model.tool_mode, bad input."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from masgrid._private.actors.agent_host import AgentHost, AgentSetup, HostSpec
from masgrid._private.actors.backends import BackendSettings
from masgrid._private.envs.tasks import get_task
from masgrid._private.envs.tool_calls import ToolSpecError
from tests.support.chat_server import ChatServer, Reply, tool_call
from tests.support.tool_specs import TOOLS, block

SYSTEM = "You are a coding agent."


def setups(agents: int) -> dict[int, AgentSetup]:
    task = get_task("sorting")
    instance = task.generate(agents, 2, 3, mode="random")
    return {i: AgentSetup(view=task.view(instance, i), system_prompt=f"{SYSTEM} #{i}") for i in range(agents)}


def host_for(base_url: str, mode: str = "native", client: str = "direct") -> AgentHost:
    cfg = BackendSettings(name="t", base_url=base_url, max_retries=0, timeout_s=5, http_client=client,
                          tool_mode=mode)
    return AgentHost(HostSpec(backend="openai", settings=cfg, protocol="broadcast", seed=0))


def run(host: AgentHost, agents: int, body):
    async def scenario():
        await host.start_phase(setups(agents))
        try:
            return await body()
        finally:
            await host.close()

    return asyncio.run(scenario())


@pytest.mark.parametrize("client", ["aiohttp", "direct"])
def test_act_keeps_an_openai_history_that_the_next_call_replays(client):
    replies = iter([
        Reply("Looking.", tool_calls=[tool_call("view", '{"path": "a.py"}', id="v1"),
                                      tool_call("bash", '{"command": "ls', id="b1"),  # malformed
                                      tool_call("view", '["a.py"]', id="n1")]),  # not an object
        Reply("All done."),
    ])
    with ChatServer(lambda request: next(replies)) as server:
        host = host_for(server.base_url, client=client)

        async def body():
            first = await host.act(0, [{"role": "user", "content": "Fix it."}], TOOLS)
            results = [{"role": "tool", "tool_call_id": "v1", "content": "1: x = 1"},
                       {"role": "tool", "tool_call_id": "b1", "content": "error: arguments are not valid JSON"},
                       {"role": "tool", "tool_call_id": "n1", "content": "error: not an object"}]
            second = await host.act(0, results, TOOLS)
            return first, second, list(host.history(0))

        first, second, history = run(host, 1, body)
        requests = server.requests
    assert [c.name for c in first.tool_calls] == ["view", "bash", "view"] and first.tool_calls[1].error
    assert second.tool_calls is None and second.text == "All done."
    assistant = {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "v1", "type": "function", "function": {"name": "view", "arguments": '{"path": "a.py"}'}},
        # arguments that are not a JSON object are replayed as {} (vLLM would refuse the conversation)
        {"id": "b1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
        {"id": "n1", "type": "function", "function": {"name": "view", "arguments": "{}"}}]}
    assert requests[1]["messages"] == [
        {"role": "system", "content": f"{SYSTEM} #0"}, {"role": "user", "content": "Fix it."}, assistant,
        {"role": "tool", "tool_call_id": "v1", "content": "1: x = 1"},
        {"role": "tool", "tool_call_id": "b1", "content": "error: arguments are not valid JSON"},
        {"role": "tool", "tool_call_id": "n1", "content": "error: not an object"}]
    assert requests[0]["tools"] == requests[1]["tools"] == TOOLS
    assert history == requests[1]["messages"] + [{"role": "assistant", "content": "All done."}]
    # the events' reply text shows each call with its arguments as the model wrote them
    assert first.recorded_text == "Looking.\n" + block("view", {"path": "a.py"}) + "\n" + \
        '```tool\n{"name": "bash", "arguments": ' + json.dumps('{"command": "ls') + "}\n```\n" + \
        block("view", ["a.py"])


def test_agents_act_concurrently_and_one_agents_steps_stay_in_order():
    both_in = threading.Barrier(2, timeout=5)  # fails unless two requests are in flight together

    def script(request):
        agent = int(request["messages"][0]["content"].split("#")[1])
        if request["messages"][-1]["content"].startswith("together"):
            both_in.wait()
        return Reply(f"agent {agent} turn {sum(m['role'] == 'assistant' for m in request['messages'])}")

    with ChatServer(script) as server:
        host = host_for(server.base_url)

        async def body():
            pair = await asyncio.gather(host.act(0, [{"role": "user", "content": "together 0"}], TOOLS),
                                        host.act(1, [{"role": "user", "content": "together 1"}], TOOLS))
            # two steps of one agent at once: the second waits for the first and sees its turn
            again = await asyncio.gather(host.act(0, [{"role": "user", "content": "a"}], TOOLS),
                                         host.act(0, [{"role": "user", "content": "b"}], TOOLS))
            return pair, again, host.history(0)

        pair, again, history = run(host, 2, body)
    assert [c.text for c in pair] == ["agent 0 turn 0", "agent 1 turn 0"]
    assert [c.text for c in again] == ["agent 0 turn 1", "agent 0 turn 2"]
    assert [m["content"] for m in history[1:]] == ["together 0", "agent 0 turn 0", "a", "agent 0 turn 1", "b",
                                                   "agent 0 turn 2"]


def test_tool_mode_fenced_on_the_host_sends_text_and_reads_blocks():
    replies = iter([Reply("Viewing.\n" + block("view", {"path": "a.py"})), Reply("Done.")])
    with ChatServer(lambda request: next(replies)) as server:
        host = host_for(server.base_url, mode="fenced")

        async def body():
            first = await host.act(0, [{"role": "user", "content": "Go."}], TOOLS)
            await host.act(0, [{"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "x = 1"}], TOOLS)
            return first

        first = run(host, 1, body)
        requests = server.requests
    assert "tools" not in requests[0] and "# Tools" in requests[0]["messages"][0]["content"]
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_0_0", "view", {"path": "a.py"})
    assert first.recorded_text == first.text  # the reply already shows its block
    assert requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": "Viewing.\n" + block("view", {"path": "a.py"})},
        {"role": "user", "content": "Result of tool call call_0_0 (view):\nx = 1"}]


def test_a_failed_call_leaves_an_empty_turn_and_bad_input_is_a_clear_error():
    with ChatServer(lambda request: Reply(status=500)) as server:
        host = host_for(server.base_url)

        async def body():
            failed = await host.act(0, [{"role": "user", "content": "Go."}], TOOLS)
            with pytest.raises(ToolSpecError, match=r"tools\[0\]"):
                await host.act(0, [], [{"type": "function", "function": {"name": "has space"}}])
            with pytest.raises(ValueError, match=r"new_messages\[1\] is not a chat message"):
                await host.act(0, [{"role": "user", "content": "ok"}, "not a message"], TOOLS)
            with pytest.raises(KeyError, match="agent 5 is not hosted here"):
                await host.act(5, [], TOOLS)
            return failed, host.history(0)

        failed, history = run(host, 1, body)
    assert failed.error_class == "http_5xx" and failed.tool_calls is None and failed.recorded_text is None
    assert history[-1] == {"role": "assistant", "content": ""} and len(history) == 3  # bad input appended nothing
