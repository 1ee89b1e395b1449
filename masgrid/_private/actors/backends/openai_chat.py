"""OpenAI-compatible chat-completions backend (vLLM, a Ray Serve LLM app, a hosted API).

Requests go through the `openai` client's generic `post` (the route its README gives for
requests it has no typed method for): the typed `chat.completions.create` walks every
message of the history through its parameter transformer on each call, which on a
2-core machine costs more CPU than the HTTP exchange itself (benchmarks/
bench_serving_concurrency.py). The client makes one attempt per call; retries and the
per-attempt deadline are masgrid's (backends/retry.py, the same for every HTTP client):
the client's own timeout is per read, so a server trickling bytes kept a call alive for a
minute, and its retries were not counted as attempts.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from masgrid._private.actors.backends.base import FILTERED, BackendSettings, ChatBackend, Completion, Message
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.actors.backends.constrained_tools import constrain
from masgrid._private.actors.backends.endpoint_limit import Gate, gate_for
from masgrid._private.actors.backends.errors import CallFailure, classify_exception, malformed
from masgrid._private.actors.backends.retry import AttemptFailed, with_retries
from masgrid._private.actors.backends.chat_tools import MalformedToolCalls, prompt_tokens, read_tool_calls, turn_of
from masgrid._private.envs.text import clean_text
from masgrid._private.envs.tokens import TokenCounter
from masgrid._private.envs.tool_calls import tool_names, with_calls

if TYPE_CHECKING:  # imported where a client is made: `http_client=direct` never pays its 1.4 s import
    import openai


class ReplyMessage(BaseModel):
    content: str | None = None
    tool_calls: Any = None  # read leniently, call by call (backends/chat_tools.py)


class ReplyChoice(BaseModel):
    message: ReplyMessage
    finish_reason: str | None = None


#: more tokens than any one call can use: usage beyond it is a server bug, not a count
MAX_USAGE_TOKENS = 100_000_000


class ReplyUsage(BaseModel):
    """Usage as a count: non-negative whole numbers within MAX_USAGE_TOKENS (strict: a
    float, a string or 1e20 is not a token count)."""

    model_config = ConfigDict(strict=True)

    prompt_tokens: int = Field(ge=0, le=MAX_USAGE_TOKENS)
    completion_tokens: int = Field(ge=0, le=MAX_USAGE_TOKENS)


def cached_tokens(raw: Any, prompt: int) -> int | None:
    """usage.prompt_tokens_details.cached_tokens when it is a count within the prompt, else None
    (not reported, or not believable: it is never guessed)."""
    details = raw.get("prompt_tokens_details") if isinstance(raw, dict) else None
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if type(value) is int and 0 <= value <= prompt else None


class ChatReply(BaseModel):
    """The fields masgrid reads from a chat-completions response (the rest is ignored)."""

    model_config = ConfigDict(extra="ignore")

    choices: list[ReplyChoice]
    usage: Any = None  # checked on its own: bad usage must not throw away a good reply


def completion_from_reply(data: Any, messages: list[Message], count: TokenCounter, latency_s: float,
                          attempts: int, tools: list[dict[str, Any]] | None = None) -> Completion:
    """A response body as a Completion; a body that is not a chat completion is a recorded error.
    A reply calling tools may have null content (its text is then ""), and so may one the
    provider's content filter stopped (finish_reason `content_filter`): that is the model's
    answer as deployed, kept with its finish_reason, never a platform failure."""
    try:
        reply = ChatReply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return failed_call(malformed(f"{where}: {first['msg']}"), latency_s, attempts)
    if not reply.choices:
        return failed_call(malformed("the response had no choices"), latency_s, attempts)
    choice = reply.choices[0]
    try:
        raw_calls = choice.message.tool_calls
        # the turn number names calls without an id; counting it walks the whole history,
        # so only a reply that calls tools pays for it
        calls = read_tool_calls(raw_calls, tool_names(tools), turn_of(messages) if raw_calls else 0)
    except MalformedToolCalls as exc:
        return failed_call(malformed(str(exc)), latency_s, attempts)
    if choice.message.content is None and not calls and choice.finish_reason != FILTERED:
        return failed_call(malformed(f"choices.0.message.content is null (finish_reason "
                                     f"{choice.finish_reason})"), latency_s, attempts)
    text = clean_text(choice.message.content or "")  # lone surrogates would poison the next request
    if calls:
        calls = [c.model_copy(update={"name": clean_text(c.name), "raw_arguments": clean_text(c.raw_arguments)})
                 for c in calls]
    usage, source = _usage(reply.usage)
    cached = None
    if usage is not None:
        tin, tout = usage.prompt_tokens, usage.completion_tokens
        cached = cached_tokens(reply.usage, tin)
    else:
        tin, tout = prompt_tokens(messages, tools, count), count(with_calls(text, calls) or "")
    return Completion(text=text, tool_calls=calls, tokens_in=tin, tokens_out=tout, tokens_cached=cached,
                      usage_source=source,
                      latency_s=latency_s, attempts=attempts, finish_reason=choice.finish_reason)


def _usage(raw: Any) -> tuple[ReplyUsage | None, str]:
    """The server's usage, or None with why the tokens are counted here instead:
    `estimate` (no usage sent) or `invalid` (sent, but not a count)."""
    if raw is None:
        return None, "estimate"
    try:
        return ReplyUsage.model_validate(raw), "server"
    except ValidationError:
        return None, "invalid"


def failed_call(failure: CallFailure, latency_s: float, attempts: int) -> Completion:
    """A call that failed on every attempt. It carries no tokens: nothing came back, and an
    estimate of the prompt would inflate token counts and deflate TE for calls that never ran."""
    return Completion(error=failure.error, error_class=failure.error_class, http_status=failure.http_status,
                      final=failure.final, latency_s=latency_s, attempts=attempts)


def api_key(settings: BackendSettings) -> str:
    return os.environ.get(settings.api_key_env) or "EMPTY"  # local servers accept any key


def request_body(settings: BackendSettings, messages: list[Message],
                 tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The chat-completions body; `tools` only when some are offered (an empty list is
    refused by some servers)."""
    body: dict[str, Any] = {"model": settings.request_model, "messages": messages}
    if tools:
        body["tools"] = tools
    for key in ("temperature", "top_p", "max_tokens", "seed"):
        if getattr(settings, key) is not None:
            body[key] = getattr(settings, key)
    body.update(settings.extra_body)
    if settings.tool_constraint == "regex":
        constrain(body, tools)
    return body


class OpenAIChatBackend(ChatBackend):
    """One agent's calls through a client that the agent host's ClientCache owns and closes."""

    def __init__(self, settings: BackendSettings, count: TokenCounter, client: openai.AsyncOpenAI,
                 gate: Gate | None = None) -> None:
        self.settings = settings
        self.count = count
        self.client = client
        self.gate = gate  # the endpoint's shared connection limit (model.max_connections)

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        import openai

        body = request_body(self.settings, messages, tools)

        async def attempt(attempts: int, start: float) -> Completion:
            try:
                raw = await self.client.post("/chat/completions", body=body, cast_to=openai.AsyncAPIResponse[dict])
                data = await raw.parse()
            except openai.APIStatusError as exc:
                raise AttemptFailed(classify_exception(exc), exc.response.headers.get("retry-after")) from exc
            return completion_from_reply(data, messages, self.count, time.perf_counter() - start, attempts, tools)

        return await with_retries(self.settings, attempt, failed_call, self.gate)


#: idle-connection expiry when `model.keepalive_s` is unset (see BackendSettings.keepalive_s)
KEEPALIVE_S = 4.0


def make_client(settings: BackendSettings) -> openai.AsyncOpenAI:
    """One client, one connection pool on the chosen transport (`model.http_client`; both are
    the openai library's own): the library's connection limits, but idle connections
    expire after `model.keepalive_s`. With the library's 5 s, equal to uvicorn's keep-alive,
    a connection idle for about 5 s between rounds can be reused just as the server closes
    it, and the call fails with a connection error (seen with max_retries=0)."""
    import openai

    defaults = openai.DEFAULT_CONNECTION_LIMITS
    limits = type(defaults)(max_connections=defaults.max_connections,  # the Limits class openai is built on
                            max_keepalive_connections=defaults.max_keepalive_connections,
                            keepalive_expiry=settings.keepalive_s or KEEPALIVE_S)
    transport = openai.DefaultAioHttpClient if settings.http_client == "aiohttp" else openai.DefaultAsyncHttpxClient
    return openai.AsyncOpenAI(base_url=settings.base_url, api_key=api_key(settings), timeout=settings.timeout_s,
                              max_retries=0, http_client=transport(limits=limits))  # retries: backends/retry.py


def shared_client(clients: ClientCache, settings: BackendSettings) -> openai.AsyncOpenAI:
    """The host's client for these settings, made on first use."""
    key = ("openai", settings.base_url, settings.api_key_env, settings.timeout_s, settings.http_client,
           settings.keepalive_s)
    return clients.get(key, lambda: make_client(settings))


def http_backend(settings: BackendSettings, count: TokenCounter, clients: ClientCache,
                 pool_settings: BackendSettings | None = None) -> ChatBackend:
    """The chat backend for an HTTP endpoint, on the client `model.http_client` names. The
    connection pool is the host's for `pool_settings` (default: `settings`), so agents whose
    settings differ only in their request body share one pool."""
    if not settings.base_url:
        raise ValueError("backend=openai needs model.base_url (an OpenAI-compatible /v1 endpoint)")
    pool = pool_settings or settings
    gate = shared_gate(clients, settings)
    if settings.http_client in ("direct", "lean"):
        from masgrid._private.actors.backends.direct_http import DirectChatBackend, shared_session

        return DirectChatBackend(settings, count, shared_session(clients, pool), gate)
    return OpenAIChatBackend(settings, count, shared_client(clients, pool), gate)


def shared_gate(clients: ClientCache, settings: BackendSettings) -> Gate | None:
    """The host's gate to this endpoint's shared limit (one per endpoint and ceiling)."""
    if settings.max_connections is None:
        return None
    key = ("gate", settings.base_url, settings.request_model, settings.max_connections, settings.timeout_s)
    return clients.get(key, lambda: gate_for(settings.base_url, settings.request_model, settings.max_connections,
                                             settings.timeout_s))
