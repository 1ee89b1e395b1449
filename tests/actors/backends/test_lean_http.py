"""http_client=lean against servers on loopback, with aiohttp (http_client=direct) as the
independent reference: the same scripted responses must yield the same recorded call."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from pydantic import ValidationError

from masgrid._private.actors.backends import BackendSettings, ClientCache
from masgrid._private.actors.backends.lean_http import LeanSession
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.envs.tokens import approx_tokens
from tests.support.raw_http_server import RawHttpServer, RawReply, chat_reply, closed_port

MESSAGES = [{"role": "system", "content": "You sort numbers."}, {"role": "user", "content": "go"}]
#: what a recorded call is, for comparing the two clients (latency aside)
FIELDS = ("text", "error", "error_class", "http_status", "attempts", "tokens_in", "tokens_out", "usage_source",
          "final")


def settings(base_url: str, client: str, **extra) -> BackendSettings:
    return BackendSettings(name="m", base_url=base_url, timeout_s=2, http_client=client, **extra)


async def calls(cfg: BackendSettings, n: int, concurrent: bool = False) -> list:
    clients = ClientCache()
    try:
        backend = http_backend(cfg, approx_tokens, clients)
        if concurrent:
            return list(await asyncio.gather(*(backend.complete(MESSAGES) for _ in range(n))))
        return [await backend.complete(MESSAGES) for _ in range(n)]
    finally:
        await clients.aclose()


def record(completion) -> dict:
    return {f: getattr(completion, f) for f in FIELDS}


def random_reply(rng: random.Random) -> RawReply:
    """A response as servers send them: any framing, chunk size, status, body."""
    framing = rng.choice(["length", "chunked", "close"])
    # (a silent close after the reply is left out: whether the next request races it is timing)
    kw = {"framing": framing, "chunk_size": rng.choice([1, 3, 64, 4096]), "keep_alive": rng.random() < 0.8}
    kind = rng.random()
    if kind < 0.6:
        words = [rng.choice(["sort", "ünïcode", "数字", "[1, 2]", "\"quoted\"", "line\nbreak", "x" * rng.randint(1, 50)])
                 for _ in range(rng.randint(0, 400))]
        return chat_reply(" ".join(words), **kw)
    if kind < 0.8:
        status = rng.choice([400, 404, 422, 429, 500, 503])
        body = json.dumps({"error": {"message": f"scripted {status}"}}).encode()
        headers = {"Retry-After": "0.01"} if status in (429, 503) else {}
        return RawReply(body=body, status=status, reason="Scripted", headers=headers, **kw)
    if kind < 0.9:
        return RawReply(body=b"<html>not json</html>", **kw)  # a malformed reply
    return RawReply(body=json.dumps({"id": "no choices"}).encode(), **kw)


@pytest.mark.parametrize("seed", range(6))
def test_lean_records_every_call_exactly_as_aiohttp_does(seed):
    rng = random.Random(seed)
    script = [random_reply(rng) for _ in range(40)]
    outcomes = {}
    for client in ("direct", "lean"):
        replies = iter(script)
        with RawHttpServer(lambda request, conn: next(replies)) as server:
            cfg = settings(server.base_url, client, max_retries=0)
            outcomes[client] = [record(c) for c in asyncio.run(calls(cfg, len(script)))]
            assert len(server.requests) == len(script) and all(r["messages"] == MESSAGES for r in server.requests)
    for i, (direct, lean) in enumerate(zip(outcomes["direct"], outcomes["lean"])):
        assert lean == direct, (i, script[i])


def test_keep_alive_reuses_connections_and_close_is_honoured():
    with RawHttpServer(lambda request, conn: chat_reply("ok")) as server:
        done = asyncio.run(calls(settings(server.base_url, "lean"), 30))
        assert all(c.text == "ok" for c in done) and server.connections == 1
    with RawHttpServer(lambda request, conn: chat_reply("bye", keep_alive=False)) as server:
        done = asyncio.run(calls(settings(server.base_url, "lean"), 5))
        assert all(c.text == "bye" for c in done) and server.connections == 5


def test_a_connection_the_server_dropped_while_idle_is_not_reused():
    with RawHttpServer(lambda request, conn: chat_reply("ok", drop_after=True)) as server:
        async def spaced() -> list:
            clients = ClientCache()
            backend = http_backend(settings(server.base_url, "lean", max_retries=0), approx_tokens, clients)
            out = []
            for _ in range(5):
                out.append(await backend.complete(MESSAGES))
                await asyncio.sleep(0.05)  # the server's close reaches the client while the connection is idle
            await clients.aclose()
            return out

        done = asyncio.run(spaced())
    assert [c.text for c in done] == ["ok"] * 5 and server.connections == 5


def test_connections_in_use_stay_within_the_limit():
    with RawHttpServer(lambda request, conn: chat_reply("ok", delay_s=0.02)) as server:
        done = asyncio.run(calls(settings(server.base_url, "lean", max_concurrency=4), 60, concurrent=True))
    assert all(c.text == "ok" for c in done) and server.max_open <= 4


def test_garbage_and_a_reply_cut_short_are_connection_errors_and_the_next_call_recovers():
    script = iter([RawReply(raw=b"SSH-2.0-OpenSSH_9.6\r\n\r\n"),
                   RawReply(raw=b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"choices\": ["),
                   chat_reply("back")])
    with RawHttpServer(lambda request, conn: next(script)) as server:
        garbage, cut, ok = asyncio.run(calls(settings(server.base_url, "lean", max_retries=0), 3))
    assert garbage.error_class == cut.error_class == "connection_error", (garbage.error, cut.error)
    assert ok.text == "back" and ok.error is None


def test_a_timeout_closes_the_connection_and_a_closed_port_is_refused():
    script = iter([chat_reply("late", delay_s=1.0), chat_reply("next")])
    with RawHttpServer(lambda request, conn: next(script)) as server:
        cfg = settings(server.base_url, "lean", max_retries=0).model_copy(update={"timeout_s": 0.3})
        late, nxt = asyncio.run(calls(cfg, 2))
        assert server.connections == 2  # the timed-out connection was not reused
    assert late.error_class == "timeout" and nxt.text == "next"
    refused = asyncio.run(calls(settings(f"http://127.0.0.1:{closed_port()}/v1", "lean", max_retries=1), 1))[0]
    assert refused.error_class == "connection_refused" and refused.attempts == 2


def test_lean_is_plain_http_only():
    with pytest.raises(ValidationError, match="plain http:// only"):
        settings("https://api.example.com/v1", "lean")
    with pytest.raises(ValueError, match="plain http:// only"):
        LeanSession("https://api.example.com/v1", 4, 4.0)
