"""The shared judge runner (masgrid.sdk.judging): one question's retries and accounting, and the
runner's concurrency and clean-up, against scripted backends written here."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from masgrid._private.actors.backends.base import Completion
from masgrid._private.platform.judging import judge_runner
from masgrid.sdk.judging import BackendSettings, ask_judge, judge_each


class Malformed(ValueError):
    pass


def parse(text: str | None) -> int:
    if text is None or not text.isdigit():
        raise Malformed(f"not a number: {text!r}")
    return int(text)


class Scripted:
    """Replies in order: a string is an answer, None a failed call."""

    def __init__(self, replies: list[str | None]) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []

    async def complete(self, messages: list[dict[str, Any]], tools: Any = None) -> Completion:
        self.seen.append(messages)
        text = self.replies.pop(0)
        if text is None:
            return Completion(text=None, tokens_in=3, tokens_out=0, error="http_5xx: boom", error_class="http_5xx")
        return Completion(text=text, tokens_in=3, tokens_out=len(text))

    async def close(self) -> None:
        pass


def expected(replies: list[str | None], attempts: int) -> dict[str, Any]:
    """The rule, written out separately: ask until a parsable reply, a failed call or `attempts` calls."""
    answered: list[str] = []
    tokens_in = tokens_out = 0
    for n, text in enumerate(replies[:attempts], start=1):
        tokens_in += 3
        if text is None:
            return dict(value=None, call=True, fmt=None, attempts=n, tin=tokens_in, tout=tokens_out, answered=answered)
        answered.append(text)
        tokens_out += len(text)
        if text.isdigit():
            return dict(value=int(text), call=False, fmt=None, attempts=n, tin=tokens_in, tout=tokens_out,
                        answered=answered)
    return dict(value=None, call=False, fmt=f"not a number: {answered[-1]!r}", attempts=min(attempts, len(replies)),
                tin=tokens_in, tout=tokens_out, answered=answered)


@pytest.mark.parametrize("case", range(60))
def test_one_question_follows_the_rule(case: int) -> None:
    rng = random.Random(case)
    attempts = rng.choice([1, 2, 3])
    replies = [rng.choice([None, "12", "7", "twelve", "", "x9"]) for _ in range(attempts)]
    backend = Scripted(replies)
    got = asyncio.run(ask_judge(backend, [{"role": "user", "content": "q"}], parse, Malformed, attempts=attempts,  # type: ignore[arg-type]
                                retry_message=lambda why: {"role": "user", "content": f"again: {why}"}))
    want = expected(replies, attempts)
    assert (got.value, got.call_error is not None, got.format_error, got.attempts, got.tokens_in, got.tokens_out) == \
        (want["value"], want["call"], want["fmt"], want["attempts"], want["tin"], want["tout"])
    assert got.raw_reply == (want["answered"][-1] if want["answered"] else None)
    assert got.raw_first_reply == (want["answered"][0] if len(want["answered"]) > 1 else None)
    # each retry carries the refused reply and the reason back to the judge
    for n, sent in enumerate(backend.seen[1:], start=1):
        assert sent[-2] == {"role": "assistant", "content": replies[n - 1]}
        assert sent[-1]["content"].startswith("again: not a number")


def test_without_a_retry_message_the_question_is_not_asked_again_with_new_text() -> None:
    backend = Scripted(["no", "5"])
    got = asyncio.run(ask_judge(backend, [{"role": "user", "content": "q"}], parse, Malformed, attempts=2))  # type: ignore[arg-type]
    assert got.value == 5 and backend.seen[0] == backend.seen[1]


def test_the_runner_holds_to_its_concurrency_and_closes_the_client_when_a_judge_fails(monkeypatch) -> None:
    closed: list[str] = []
    in_flight = peak = 0

    class Backend(Scripted):
        async def close(self) -> None:
            closed.append("backend")

    monkeypatch.setattr(judge_runner, "judge_backend", lambda settings, clients: Backend([]))

    async def judge(backend: Any, item: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        if item == 7:
            raise RuntimeError("disk full")

    settings = BackendSettings(base_url="http://127.0.0.1:9/v1", name="judge")
    with pytest.raises(RuntimeError, match="disk full"):
        asyncio.run(judge_each(range(10), settings, judge, concurrency=3))
    assert peak == 3 and closed == ["backend"]
