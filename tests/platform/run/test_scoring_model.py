"""A scorer's own model (platform/run/scoring_model.py): which settings it gets, and its blocking
`ask` over each of the agents' HTTP clients against a real loopback chat server."""

from __future__ import annotations

import asyncio

import pytest

from masgrid._private.actors.backends import BackendSettings, ClientCache, make_backend
from masgrid._private.envs.tasks.base import ScoringCallFailed, ScoringModel
from masgrid._private.envs.tokens import get_counter
from masgrid._private.platform.run.scoring_model import run_with_ask, scoring_settings
from tests.support.chat_server import ChatServer, Reply, words

RUN_MODEL = BackendSettings(name="agents-model", base_url="http://127.0.0.1:9/v1", temperature=0.7,
                            tool_mode="fenced", max_tokens=99)


def test_default_is_the_run_model_at_the_forced_temperature() -> None:
    request = ScoringModel(actor="resolver", config_key="cooper.resolver_model", temperature=0.0)
    kind, settings = scoring_settings(request, "openai", RUN_MODEL)
    assert kind == "openai" and settings.name == "agents-model" and settings.max_tokens == 99
    assert settings.temperature == 0.0 and settings.tool_mode == "native"
    assert RUN_MODEL.temperature == 0.7  # the agents' settings are not changed
    kind, _ = scoring_settings(request, "serve", RUN_MODEL)
    assert kind == "serve"
    with pytest.raises(ValueError, match="^cooper.resolver_model: scripted agents have no model the resolver"):
        scoring_settings(request, "scripted", BackendSettings())
    own = request.model_copy(update={"settings": {"name": "r", "base_url": "http://127.0.0.1:1/v1"}})
    kind, settings = scoring_settings(own, "scripted", BackendSettings())
    assert (kind, settings.name, settings.temperature) == ("openai", "r", 0.0)


def _ask_twice(server: ChatServer, client: str) -> tuple[list, dict, list]:
    settings = BackendSettings(name="m", base_url=server.base_url, http_client=client, max_retries=1, timeout_s=2,
                               temperature=0.0)
    seen: list = []

    def work(ask) -> list:
        out = []
        for prompt in ("first question here", "second"):
            try:
                out.append(ask(prompt))
            except ScoringCallFailed as exc:
                out.append(exc)
        return out

    async def main():
        clients = ClientCache()
        backend = make_backend("openai", settings, get_counter(), None, "workspace", 0, {"clients": clients})
        try:
            return await run_with_ask(work, "resolver", settings, backend, lambda p, c: seen.append((p, c)))
        finally:
            await clients.aclose()

    result, totals = asyncio.run(main())
    return result, totals, seen


@pytest.mark.parametrize("client", ["aiohttp", "httpx", "direct"])
def test_ask_through_each_http_client(client: str) -> None:
    def script(request: dict) -> Reply:
        if request["messages"][0]["content"] == "second":
            return Reply(status=500)
        return Reply(text="the answer")

    with ChatServer(script) as server:
        result, totals, seen = _ask_twice(server, client)
        requests = list(server.requests)
    assert result[0] == "the answer"
    assert isinstance(result[1], ScoringCallFailed) and str(result[1]).startswith("http_5xx")
    assert len(requests) == 3  # the failing call was retried once
    assert all(r["temperature"] == 0.0 and r["model"] == "m" for r in requests)
    assert [p for p, _ in seen] == ["first question here", "second"] and seen[1][1].attempts == 2
    assert totals == {"resolver_model": "m", "resolver_calls": 2, "resolver_errors": 1,
                      "resolver_tokens_in": words("first question here"), "resolver_tokens_out": words("the answer")}


def test_a_hung_server_times_out_into_a_failure() -> None:
    with ChatServer(lambda request: Reply(text="late", hang_s=3.0)) as server:
        result, totals, seen = _ask_twice(server, "direct")
    assert all(isinstance(r, ScoringCallFailed) and str(r).startswith("timeout") for r in result)
    assert totals["resolver_errors"] == 2 and all(c.attempts == 2 for _, c in seen)
