"""The model-backed conflict resolver: what it sends, what it accepts, what it rejects and why."""

from __future__ import annotations

import random

import pytest

from masgrid.families.cooper.merge import resolve_text
from masgrid.families.cooper.resolver import (LLMResolver, ResolverCallFailed, extract_answer, llm_resolver,
                                                read_answer)

SNIPPET = "a\n<<<<<<< ours\nx = 1\n=======\nx = 2\n>>>>>>> theirs\nb\n"


def test_llm_resolver_takes_the_code_block_and_rejects_markers():
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return "Here it is:\n```python\na\nx = 1\nx = 2\nb\n```\nDone."

    assert llm_resolver(ask)(SNIPPET) == "a\nx = 1\nx = 2\nb\n"
    assert SNIPPET in prompts[0]
    # an answer still holding markers (or empty) leaves the region as it was: the stage fails
    assert llm_resolver(lambda p: "```\n" + SNIPPET + "```")(SNIPPET) == SNIPPET
    assert extract_answer("```\n\n```") is None and extract_answer("y = 3") == "y = 3\n"
    text = "top\n" + SNIPPET + "bottom\n"
    assert "<<<<<<<" in resolve_text(text, llm_resolver(lambda p: "=======\n"))


@pytest.mark.parametrize("reply, reason", [
    ("", "empty answer"),
    ("```python\n   \n```", "empty answer"),
    ("```\n" + SNIPPET + "```", "conflict markers"),
    ("a\n=======\nb\n", "conflict markers"),
    (">>>>>>> theirs\n", "conflict markers"),
    ("```python\ndef f(x", "never closes"),
])
def test_unusable_answers_are_rejected_with_their_reason(reply: str, reason: str):
    answer, why = read_answer(reply)
    assert answer is None and reason in why
    resolver = LLMResolver(lambda p: reply)
    assert resolver(SNIPPET) == SNIPPET and len(resolver.failures) == 1 and reason in resolver.failures[0]


def test_fences_and_think_blocks_are_unwrapped_and_lookalike_lines_kept():
    assert read_answer("<think>the ``` is tricky\n=======\n</think>\n```py\nz = 0\n```") == ("z = 0\n", None)
    # a reStructuredText underline longer than a marker is code, not a marker
    assert read_answer('"""Title\n==========\n"""\n') == ('"""Title\n==========\n"""\n', None)
    assert read_answer("x = '<<<<<<< not at line start'") == ("x = '<<<<<<< not at line start'\n", None)


def test_a_failed_call_is_a_recorded_failure_and_later_regions_are_still_asked():
    answers = iter([ResolverCallFailed("http_5xx: http 500: boom"), "```\nok\n```"])

    def ask(prompt: str) -> str:
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return item

    resolver = LLMResolver(ask)
    text = "top\n" + SNIPPET + "mid\n" + SNIPPET.replace("x", "y") + "end\n"
    out = resolve_text(text, resolver)
    # bottom-up: the second region is asked first and fails; the first is resolved
    assert resolver.calls == 2 and resolver.failures == ["region 1: model call failed: http_5xx: http 500: boom"]
    assert out.count("<<<<<<<") == 1 and "ok\n" in out


def test_marker_rule_against_an_independent_line_check():
    """Random answers: rejected for markers exactly when some line is a marker line as git writes them."""
    rng = random.Random(7)
    pieces = ["x = 1", "=======", "========", "<<<<<<< HEAD", "<<<<<<<", ">>>>>>> b", ">>>>>>>x", " =======",
              "<<<<<<<< eight", "# ok", ""]
    for _ in range(500):
        lines = [rng.choice(pieces) for _ in range(rng.randint(1, 6))]
        reply = "\n".join(lines) + "\n"
        marker = any(line == "=======" or line.split(" ")[0] in ("<<<<<<<", ">>>>>>>") for line in lines)
        answer, why = read_answer(reply)
        if not reply.strip():
            assert why == "empty answer"
        else:
            assert (answer is None) == marker, (reply, why)
