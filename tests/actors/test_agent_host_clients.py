"""An agent host keeps its HTTP client for its whole life when pooled, and closes it
after the run otherwise; model replies that are not chat completions become recorded
errors instead of exceptions."""

import asyncio

import pytest

from masgrid._private.actors.agent_host import AgentHost, AgentSetup, HostSpec
from masgrid._private.actors.backends import BackendSettings
from masgrid._private.envs.tasks import get_task
from tests.support.chat_server import ChatServer, Reply


def setups(agents: int = 2) -> dict[int, AgentSetup]:
    task = get_task("sorting")
    instance = task.generate(agents, 2, 3, mode="random")
    views = [task.view(instance, i) for i in range(agents)]
    return {i: AgentSetup(view=v, system_prompt=task.build_prompt(v, "broadcast", "base"))
            for i, v in enumerate(views)}


def spec(base_url: str, pooled: bool, http_client: str = "aiohttp") -> HostSpec:
    settings = BackendSettings(name="t", base_url=base_url, max_retries=0, timeout_s=5, http_client=http_client)
    return HostSpec(backend="openai", settings=settings, protocol="broadcast", seed=0, pooled=pooled)


def closed(client) -> bool:
    """An openai client (is_closed()) or, for http_client=direct/lean, an aiohttp or lean session (.closed)."""
    return client.is_closed() if hasattr(client, "is_closed") else client.closed


async def one_run(host: AgentHost, host_spec: HostSpec) -> dict:
    host.configure(host_spec)
    await host.start_phase(setups())
    out = await host.step({0: ["go"], 1: ["go"]})
    client = host.backends[0].client
    await host.close()
    return {"client": client, "completions": out}


@pytest.mark.parametrize("http_client", ["aiohttp", "httpx", "direct", "lean"])
def test_pooled_host_reuses_its_client_and_a_per_run_host_closes_it(http_client):
    with ChatServer(lambda request: Reply("```\nreceive_messages\n```")) as server:
        async def scenario():
            pooled = AgentHost()
            first = await one_run(pooled, spec(server.base_url, True, http_client))
            second = await one_run(pooled, spec(server.base_url, True, http_client))
            assert first["client"] is second["client"] and not closed(second["client"])
            assert all(c.error is None and c.text for c in second["completions"].values())
            assert len(pooled.clients) == 1
            await pooled.clients.aclose()
            assert closed(second["client"])

            single = AgentHost()
            run = await one_run(single, spec(server.base_url, False, http_client))
            assert closed(run["client"]) and len(single.clients) == 0

        asyncio.run(scenario())
        assert len(server.requests) == 6


@pytest.mark.parametrize("http_client", ["aiohttp", "httpx", "direct", "lean"])
def test_a_reply_that_is_not_a_chat_completion_is_a_recorded_error(http_client):
    bodies = iter([{"choices": "nope"}, "plain text, not JSON", {"object": "chat.completion"},
                   {"choices": [{"message": {"content": None}}]}])

    def script(request):
        return Reply(body=next(bodies))

    with ChatServer(script) as server:
        async def scenario():
            host = AgentHost(spec(server.base_url, False, http_client))
            await host.start_phase(setups(1))
            return [(await host.step({0: ["go"]}))[0] for _ in range(4)]

        first, second, third, fourth = asyncio.run(scenario())
    assert first.error.startswith("malformed_response: choices:")
    assert second.error.startswith("malformed_response: body:")
    assert third.error.startswith("malformed_response: choices:")
    assert fourth.error.startswith("malformed_response: choices.0.message.content is null")
    assert {c.error_class for c in (first, second, third, fourth)} == {"malformed_response"}
    assert all(c.tokens_in == 0 and c.usage_source == "none" for c in (first, second, third, fourth))
