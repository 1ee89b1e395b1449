"""Failed model calls get the right class on every HTTP client, through a real loopback server.

The expected class of each case is written here from the table in backends/errors.py (what
the server did), not from what the code returns.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket

import pytest

from masgrid._private.actors.backends import BackendSettings, ClientCache
from masgrid._private.actors.backends.errors import RETRYABLE_4XX, classify_exception, http_failure, server_message
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.envs.tokens import approx_tokens
from tests.support.chat_server import ChatServer, Reply

CLIENTS = ("aiohttp", "httpx", "direct")
MESSAGES = [{"role": "system", "content": "You are Agent-0, one of 2."}, {"role": "user", "content": "go"}]


def call(base_url: str, client: str, retries: int = 0, timeout_s: float = 5.0):
    settings = BackendSettings(name="m", base_url=base_url, http_client=client, max_retries=retries,
                               timeout_s=timeout_s)

    async def go():
        clients = ClientCache()
        try:
            return await http_backend(settings, approx_tokens, clients).complete(MESSAGES)
        finally:
            await clients.aclose()

    return asyncio.run(go())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens here once the socket is closed


@pytest.mark.parametrize("client", CLIENTS)
def test_a_closed_port_is_connection_refused_never_a_timeout(client):
    failed = call(f"http://127.0.0.1:{closed_port()}/v1", client)
    assert failed.error_class == "connection_refused", failed.error
    assert failed.error.startswith("connection_refused: ") and "timeout" not in failed.error.lower()
    assert failed.tokens_in == failed.tokens_out == 0 and failed.usage_source == "none"
    assert not failed.final


CONTEXT = ("This model's maximum context length is 4096 tokens. However, you requested 5120 tokens "
           "(5000 in the messages, 120 in the completion).")


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("status", "body", "cls", "final", "words"), [
    (400, {"object": "error", "message": CONTEXT, "type": "BadRequestError", "code": 400}, "context_length", True,
     "maximum context length"),
    (404, {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError"}}, "http_4xx", True,
     "does not exist"),
    (401, {"detail": "invalid api key"}, "http_4xx", True, "invalid api key"),
    (429, {"error": {"message": "slow down"}}, "http_429", False, "slow down"),
    (500, {"error": {"message": "engine crashed"}}, "http_5xx", False, "engine crashed"),
    (503, "upstream unavailable", "http_5xx", False, "upstream unavailable"),
])
def test_http_errors_carry_status_class_and_the_servers_message(client, status, body, cls, final, words):
    with ChatServer(lambda request: Reply(status=status, body=body)) as server:
        failed = call(server.base_url, client)
    assert failed.error_class == cls and failed.http_status == status and failed.final is final
    assert f"http {status}" in failed.error and words in failed.error, failed.error
    assert failed.tokens_in == 0


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("body", ["<html>not json</html>", {"choices": []}, {"id": "x"},
                                  {"choices": [{"message": {"content": None}, "finish_reason": "length"}]}])
def test_a_200_that_is_not_a_usable_completion_is_malformed(client, body):
    with ChatServer(lambda request: Reply(body=body)) as server:
        failed = call(server.base_url, client)
    assert failed.error_class == "malformed_response" and failed.text is None and failed.tokens_in == 0


@pytest.mark.parametrize("client", CLIENTS)
def test_a_hang_is_a_timeout(client):
    with ChatServer(lambda request: Reply("late", hang_s=1.5)) as server:
        failed = call(server.base_url, client, timeout_s=0.3)
    assert failed.error_class == "timeout"


def test_unreachable_and_unknown_exceptions():
    wrapped = RuntimeError("could not connect")
    wrapped.__cause__ = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert classify_exception(wrapped).error_class == "unreachable"
    assert classify_exception(ValueError("bug")).error_class == "backend_error"
    assert classify_exception(TimeoutError()).error_class == "timeout"
    assert classify_exception(ConnectionResetError("reset by peer")).error_class == "connection_error"


def test_http_failure_classes_match_the_status_ranges_on_random_statuses():
    rng = random.Random(11)
    for _ in range(500):
        status = rng.randint(400, 599)
        failure = http_failure(status, {"error": {"message": f"m{status}"}})
        expected = "http_429" if status == 429 else ("http_4xx" if status < 500 else "http_5xx")
        assert failure.error_class == expected
        assert failure.final is (400 <= status < 500 and status not in RETRYABLE_4XX)
        assert failure.message == f"http {status}: m{status}"


@pytest.mark.parametrize(("body", "message"), [
    ({"error": {"message": "a"}}, "a"), ({"message": "b", "code": 400}, "b"), ({"detail": "c"}, "c"),
    ({"error": "d"}, "d"), ('{"error": {"message": "e"}}', "e"), (b"plain f", "plain f"),
    ({"other": 1}, json.dumps({"other": 1})), ("x" * 1000, "x" * 297 + "..."),
])
def test_server_message_reads_the_common_error_shapes(body, message):
    assert server_message(body) == message


def test_usage_is_used_only_when_it_is_a_count_on_random_payloads():
    """Server usage is taken when both fields are whole numbers in [0, 1e8]; otherwise the
    reply is kept and its tokens counted here (usage_source invalid), never a failed call."""
    from masgrid._private.actors.backends.openai_chat import MAX_USAGE_TOKENS, completion_from_reply

    rng = random.Random(5)
    candidates = [0, 1, 17, MAX_USAGE_TOKENS, MAX_USAGE_TOKENS + 1, -1, 1e20, 3.0, 2.5, "12", None, True, [],
                  {"n": 1}, 10**30]
    for _ in range(400):
        usage = {"prompt_tokens": rng.choice(candidates), "completion_tokens": rng.choice(candidates)}
        if rng.random() < 0.1:
            usage = rng.choice([None, "lots", [1, 2], {}])
        body = {"choices": [{"message": {"content": "hello there"}, "finish_reason": "stop"}], "usage": usage}
        done = completion_from_reply(body, MESSAGES, approx_tokens, 0.1, 1)
        good = isinstance(usage, dict) and all(
            type(usage.get(k)) is int and 0 <= usage[k] <= MAX_USAGE_TOKENS for k in ("prompt_tokens", "completion_tokens"))
        assert done.error is None and done.text == "hello there"
        if good:
            assert done.usage_source == "server" and done.tokens_in == usage["prompt_tokens"]
        else:
            assert done.usage_source == ("estimate" if usage is None else "invalid")
            assert done.tokens_in == sum(approx_tokens(m["content"]) for m in MESSAGES)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_trickling_server_fails_the_attempt_at_its_deadline_and_attempts_count_requests(client):
    """One byte every 0.2 s never trips a per-read timeout; model.timeout_s is a total deadline."""
    import time

    with ChatServer(lambda request: Reply("x" * 60, trickle_s=0.2)) as server:
        t0 = time.perf_counter()
        failed = call(server.base_url, client, retries=1, timeout_s=1.0)
        elapsed = time.perf_counter() - t0
        sent = len(server.requests)
    assert failed.error_class == "timeout" and failed.attempts == sent == 2
    assert elapsed < 2 * 1.0 + 0.5 + 1.0  # two deadlines, one backoff (at most 0.5 s), slack
