"""Chat completions over aiohttp without the openai SDK (`model.http_client=direct`).

For many agents on few cores. The SDK builds each request through its option models and an
httpx-style request object and then adapts that to aiohttp: 0.88 ms of client CPU per call
against 0.25 ms for the same POST made with aiohttp itself (2000 calls, 400 in flight,
docs/serving.md). vLLM's own serving benchmark client talks to the server with aiohttp
directly for the same reason.

The request and the recorded outcome are the same as with the SDK path: the body from
`request_body`, the reply read by `completion_from_reply`, errors recorded with the same
error classes (backends/errors.py), and the same retries and per-attempt deadline
(backends/retry.py).
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend, Completion, Message
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.actors.backends.endpoint_limit import Gate
from masgrid._private.actors.backends.errors import http_failure
from masgrid._private.actors.backends.history import encode_request
from masgrid._private.actors.backends.openai_chat import KEEPALIVE_S, api_key, completion_from_reply, failed_call, request_body
from masgrid._private.actors.backends.retry import AttemptFailed, with_retries
from masgrid._private.envs.tokens import TokenCounter

class DirectChatBackend(ChatBackend):
    """One agent's calls through the host's aiohttp session (owned by its ClientCache), or
    its lean session (`model.http_client=lean`, backends/lean_http.py): the same request
    bytes, reply handling, error records and retries either way."""

    def __init__(self, settings: BackendSettings, count: TokenCounter, client: Any, gate: Gate | None = None) -> None:
        self.settings = settings
        self.count = count
        self.gate = gate  # the endpoint's shared connection limit (model.max_connections)
        self.client = client  # the host's session (its ClientCache closes it)
        self.url = settings.base_url.rstrip("/") + "/chat/completions"  # type: ignore[union-attr]
        self.headers = {"Authorization": f"Bearer {api_key(settings)}", "Content-Type": "application/json"}
        if isinstance(client, aiohttp.ClientSession):
            self.post = partial(_aiohttp_post, client, self.url, self.headers)
        else:  # a LeanSession: the request head is built once per agent
            self.post = partial(client.post, client.request_head(urlsplit(self.url).path, self.headers))

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        # the same body as the SDK path, its messages encoded once per history (backends/history.py)
        payload = encode_request(request_body(self.settings, messages, tools), messages)

        async def attempt(attempts: int, start: float) -> Completion:
            status, raw, retry_after = await self.post(payload)
            if status == 200:
                return completion_from_reply(_decode(raw), messages, self.count, time.perf_counter() - start,
                                             attempts, tools)
            raise AttemptFailed(http_failure(status, raw[:4096]), retry_after)

        return await with_retries(self.settings, attempt, failed_call, self.gate)


async def _aiohttp_post(session: aiohttp.ClientSession, url: str, headers: dict[str, str],
                        payload: bytes) -> tuple[int, bytes, str | None]:
    async with session.post(url, data=payload, headers=headers) as response:
        return response.status, await response.read(), response.headers.get("Retry-After")


def _decode(raw: bytes) -> Any:
    """JSON if it is JSON; otherwise the text, which `completion_from_reply` reports as malformed."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def make_session(settings: BackendSettings) -> aiohttp.ClientSession:
    """Connections up to the host's concurrency limit; idle ones expire like the SDK path's."""
    connector = aiohttp.TCPConnector(limit=settings.max_concurrency,
                                     keepalive_timeout=settings.keepalive_s or KEEPALIVE_S)
    return aiohttp.ClientSession(connector=connector)


def shared_session(clients: ClientCache, settings: BackendSettings) -> Any:
    """The host's session for these settings (aiohttp for `direct`, LeanSession for `lean`)."""
    key = (settings.http_client, settings.base_url, settings.max_concurrency, settings.keepalive_s)
    if settings.http_client == "lean":
        from masgrid._private.actors.backends.lean_http import LeanSession

        return clients.get(key, lambda: LeanSession(settings.base_url or "", settings.max_concurrency,
                                                    settings.keepalive_s or KEEPALIVE_S))
    return clients.get(key, lambda: make_session(settings))
