"""OpenAI-compatible chat-completions backend (vLLM, a Ray Serve LLM app, a hosted API).

Retries use the `openai` client's own exponential backoff (connection errors, timeouts,
429 and 5xx); after the last attempt the failure is returned as a `Completion.error`.
"""

from __future__ import annotations

import os
import time

import openai

from masgrid.actors.backends.base import BackendSettings, ChatBackend, Completion, Message
from masgrid.envs.tokens import TokenCounter


class OpenAIChatBackend(ChatBackend):
    def __init__(self, settings: BackendSettings, count: TokenCounter, client: openai.AsyncOpenAI | None = None) -> None:
        if not settings.base_url and client is None:
            raise ValueError("backend=openai needs model.base_url (an OpenAI-compatible /v1 endpoint)")
        self.settings = settings
        self.count = count
        self.client = client or make_client(settings)

    async def complete(self, messages: list[Message]) -> Completion:
        s = self.settings
        params: dict = {"model": s.request_model, "messages": messages}
        for key in ("temperature", "top_p", "max_tokens", "seed"):
            if getattr(s, key) is not None:
                params[key] = getattr(s, key)
        if s.extra_body:
            params["extra_body"] = dict(s.extra_body)
        start = time.perf_counter()
        try:
            raw = await self.client.chat.completions.with_raw_response.create(**params)
            response = raw.parse()
        except Exception as exc:  # noqa: BLE001 - any failure is recorded, the run goes on
            return Completion(
                error=describe_error(exc),
                latency_s=time.perf_counter() - start,
                attempts=s.max_retries + 1,
                tokens_in=sum(self.count(m["content"]) for m in messages),
                usage_source="estimate",
            )
        latency = time.perf_counter() - start
        attempts = int(raw.retries_taken) + 1 if hasattr(raw, "retries_taken") else 1
        if not response.choices:
            return Completion(error="response had no choices", latency_s=latency, attempts=attempts)
        choice = response.choices[0]
        text = choice.message.content or ""
        if response.usage is not None:
            tin, tout, source = response.usage.prompt_tokens, response.usage.completion_tokens, "server"
        else:
            tin = sum(self.count(m["content"]) for m in messages)
            tout, source = self.count(text), "estimate"
        return Completion(text=text, tokens_in=tin, tokens_out=tout, usage_source=source,
                          latency_s=latency, attempts=attempts, finish_reason=choice.finish_reason)

    async def close(self) -> None:
        await self.client.close()


def make_client(settings: BackendSettings) -> openai.AsyncOpenAI:
    """One client (one connection pool, the library's defaults allow 1000 connections)."""
    key = os.environ.get(settings.api_key_env) or "EMPTY"  # local servers accept any key
    return openai.AsyncOpenAI(base_url=settings.base_url, api_key=key, timeout=settings.timeout_s,
                              max_retries=settings.max_retries)


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout: the model call exceeded its time limit on every attempt"
    if isinstance(exc, openai.APIStatusError):
        return f"http {exc.status_code}: {str(exc)[:300]}"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error: {exc}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
