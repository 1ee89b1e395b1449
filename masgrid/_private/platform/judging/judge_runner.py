"""Running an LLM judge over recorded items (SIMAS's answer pairs, CooperBench's conversations):
one client for the whole command, at most `concurrency` items judged at once, the client closed
however the command ends; and one judge call with its reply parsed, retried on a malformed reply
when the family asks for it. What a verdict means and where it is stored stay the family's.
Public as `masgrid.sdk.judging`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.platform.judging.judge_model import judge_backend

T = TypeVar("T")
V = TypeVar("V")


async def judge_each(items: Iterable[T], settings: BackendSettings, judge: Callable[[ChatBackend, T], Awaitable[None]],
                     concurrency: int = 4) -> None:
    """`await judge(backend, item)` for every item, `concurrency` at a time, on one judge client.

    `judge` records its own outcome (a file per item, so a rerun can skip what is done); an
    exception it raises ends the command after the client is closed."""
    clients = ClientCache()
    backend = judge_backend(settings, clients)
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: T) -> None:
        async with gate:
            await judge(backend, item)

    try:
        await asyncio.gather(*(one(item) for item in items))
    finally:
        await backend.close()
        await clients.aclose()


@dataclass
class JudgeAnswer(Generic[V]):
    """What one judge question came to. Exactly one of `value`, `call_error` (the call failed) and
    `format_error` (every reply failed `parse`) is set; tokens count every call made, failed ones too."""

    value: V | None = None
    call_error: str | None = None
    format_error: str | None = None
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    replies: list[str | None] = field(default_factory=list)

    @property
    def raw_reply(self) -> str | None:
        """The last reply the judge gave (None when no call was answered)."""
        return self.replies[-1] if self.replies else None

    @property
    def raw_first_reply(self) -> str | None:
        """The first reply when a malformed one was followed by a second, else None."""
        return self.replies[0] if len(self.replies) > 1 else None


async def ask_judge(backend: ChatBackend, messages: list[dict[str, Any]], parse: Callable[[str | None], V],
                    malformed: type[Exception], attempts: int = 1,
                    retry_message: Callable[[str], dict[str, Any]] | None = None) -> JudgeAnswer[V]:
    """Ask, parse the reply; a reply `parse` refuses with `malformed` is asked again (the reply and
    `retry_message(why)` appended to the conversation) up to `attempts` calls. A failed call ends it:
    the backend has already retried what its retry policy retries."""
    out: JudgeAnswer[V] = JudgeAnswer()
    for attempt in range(1, max(1, attempts) + 1):
        done = await backend.complete(messages)
        out.attempts, out.tokens_in, out.tokens_out = attempt, out.tokens_in + done.tokens_in, out.tokens_out + done.tokens_out
        if done.error is not None:
            out.call_error, out.format_error = str(done.error), None
            return out
        out.replies.append(done.text)
        try:
            value = parse(done.text)
        except malformed as exc:
            out.format_error = str(exc)
            if retry_message is not None:
                messages = [*messages, {"role": "assistant", "content": done.text or ""}, retry_message(str(exc))]
            continue
        out.value, out.format_error = value, None
        return out
    return out
