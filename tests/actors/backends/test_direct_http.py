"""http_client=direct (aiohttp without the openai client) and lean (masgrid's own HTTP/1.1
client), against a real server on loopback. Same request body as the SDK path; the SDK's
retry policy (what is retried, Retry-After)."""

import asyncio
import socket
import time

import pytest

from masgrid._private.actors.backends import BackendSettings, ClientCache
from masgrid._private.actors.backends.retry import MAX_BACKOFF_S, backoff_s
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.envs.tokens import approx_tokens
from tests.support.chat_server import ChatServer, Reply

MESSAGES = [{"role": "system", "content": "You sort numbers."}, {"role": "user", "content": "go"}]


@pytest.fixture(params=["direct", "lean"])
def client(request) -> str:
    return request.param


def settings(base_url: str, client: str = "direct", **extra) -> BackendSettings:
    return BackendSettings(name="m", base_url=base_url, timeout_s=2, http_client=client, **extra)


async def call(cfg: BackendSettings, messages=MESSAGES):
    clients = ClientCache()
    try:
        return await http_backend(cfg, approx_tokens, clients).complete(messages)
    finally:
        await clients.aclose()


def test_the_request_body_is_the_one_the_openai_client_sends(client):
    with ChatServer(lambda request: Reply("ok")) as server:
        extra = {"temperature": 0.2, "max_tokens": 64, "seed": 3, "extra_body": {"top_k": 5}, "max_retries": 0}
        direct = asyncio.run(call(settings(server.base_url, client, **extra)))
        sdk = asyncio.run(call(settings(server.base_url, "aiohttp", **extra)))
        first, second = server.requests
    assert direct.text == sdk.text == "ok" and direct.usage_source == "server"
    assert first == second == {"model": "m", "messages": MESSAGES, "temperature": 0.2, "max_tokens": 64,
                               "seed": 3, "top_k": 5}


def test_429_waits_for_retry_after_then_succeeds(client):
    replies = iter([Reply(status=429, headers={"Retry-After": "0.4"}), Reply("fine")])
    with ChatServer(lambda request: next(replies)) as server:
        t0 = time.perf_counter()
        done = asyncio.run(call(settings(server.base_url, client, max_retries=2)))
        waited = time.perf_counter() - t0
    assert done.text == "fine" and done.error is None and done.attempts == 2 and waited >= 0.4


def test_a_client_error_is_not_retried_and_a_server_error_is_retried_to_the_limit(client):
    with ChatServer(lambda request: Reply(status=400)) as server:
        bad = asyncio.run(call(settings(server.base_url, client, max_retries=2)))
        assert len(server.requests) == 1
    assert bad.error_class == "http_4xx" and "http 400: scripted failure" in bad.error and bad.attempts == 1
    assert bad.final and bad.http_status == 400
    assert bad.tokens_in == bad.tokens_out == 0 and bad.usage_source == "none"  # nothing estimated
    with ChatServer(lambda request: Reply(status=503, headers={"Retry-After": "0.01"})) as server:
        down = asyncio.run(call(settings(server.base_url, client, max_retries=2)))
        assert len(server.requests) == 3
    assert down.error_class == "http_5xx" and "http 503" in down.error and down.attempts == 3
    assert not down.final and down.tokens_in == 0


def test_a_hang_times_out_and_a_closed_port_is_a_connection_error(client):
    with ChatServer(lambda request: Reply("late", hang_s=2.0)) as server:
        hung = asyncio.run(call(settings(server.base_url, client, max_retries=0).model_copy(update={"timeout_s": 0.3})))
    assert hung.error_class == "timeout" and hung.attempts == 1 and 0.3 <= hung.latency_s < 1.5
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    refused = asyncio.run(call(settings(f"http://127.0.0.1:{port}/v1", client, max_retries=1)))
    assert refused.error_class == "connection_refused" and refused.attempts == 2 and not refused.final


@pytest.mark.parametrize("retry", [0, 1, 3, 10])
def test_backoff_doubles_up_to_its_cap_with_jitter(retry):
    nominal = min(0.5 * 2**retry, MAX_BACKOFF_S)
    waits = [backoff_s(retry) for _ in range(50)]
    assert all(0.75 * nominal <= w <= nominal for w in waits)
    assert backoff_s(retry, "2") == 2.0  # the server's Retry-After, when it is reasonable
    assert 0.75 * nominal <= backoff_s(retry, "600") <= nominal  # too long: ignored
    assert 0.75 * nominal <= backoff_s(retry, "Wed, 21 Oct 2026 07:28:00 GMT") <= nominal


@pytest.mark.parametrize("client", ["direct", "lean", "aiohttp"])
def test_an_http_backend_without_base_url_is_a_clear_error(client):
    with pytest.raises(ValueError, match="needs model.base_url"):
        http_backend(BackendSettings(name="m", http_client=client), approx_tokens, ClientCache())
