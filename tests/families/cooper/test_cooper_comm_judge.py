"""`parse_verdict` against an acceptance rule written here from appendix J and the module's
documented checks, on many random conversations and replies: copied quotes, mutated quotes,
quotes spanning two messages, unknown and known categories, one or two quotes, fences."""

from __future__ import annotations

import json
import random
import re

import pytest

from masgrid.families.cooper.comm_judge import CATEGORIES, InvalidVerdict, Message, judge_messages, parse_verdict

WORDS = "the handler line file tests merge I will add edit config parser done status at 42 py".split()


def expected_valid(reply: dict, messages: list[Message]) -> bool:
    """Our reading of the rules: no issue is fine; an issue needs a known id and two distinct
    quotes that each occur inside one message (runs of whitespace compared as one space)."""
    issue = reply.get("issue")
    if issue is None:
        return True
    if issue["category"] not in {"C1a", "C1b", "C2", "C3a", "C3b", "C4a", "C4b"}:
        return False
    squash = [" ".join(q.split()) for q in reply["evidence"] if q.strip()]
    if len(set(squash)) < 2:
        return False
    bodies = [" ".join(m.text.split()) for m in messages]
    return all(any(q in b for b in bodies) for q in squash)


def random_quote(rng: random.Random, messages: list[Message]) -> str:
    kind = rng.random()
    text = rng.choice(messages).text
    i = rng.randrange(len(text))
    j = rng.randrange(i, len(text)) + 1
    quote = text[i:j]
    if kind < 0.15:  # spans the end of one message and the start of the next
        a, b = rng.sample(messages, 2)
        return a.text[-8:] + " " + b.text[:8]
    if kind < 0.3:  # a paraphrase: one word changed
        return quote + " nonexistentword"
    if kind < 0.4:  # reflowed whitespace: still the same text
        return re.sub(r" ", "\n  ", quote)
    return quote


@pytest.mark.parametrize("seed", range(400))
def test_acceptance_matches_the_written_rule(seed: int) -> None:
    rng = random.Random(seed)
    messages = [Message(sender=i % 2, to=f"agent {1 - i % 2}", text=" ".join(rng.choices(WORDS, k=rng.randint(3, 20))))
                for i in range(rng.randint(2, 6))]
    category = rng.choice([*CATEGORIES, "C3", "C5", "repetition", None, None])
    reply = {"evidence": [random_quote(rng, messages) for _ in range(rng.randint(0, 3))],
             "issue": {"category": category, "description": "d"} if category else None}
    text = json.dumps(reply)
    if rng.random() < 0.2:
        text = f"```json\n{text}\n```"
    valid = expected_valid(reply, messages)
    if valid:
        verdict = parse_verdict(text, messages)
        assert verdict.category == category
        assert verdict.group == (CATEGORIES[category][0] if category else None)
    else:
        with pytest.raises(InvalidVerdict):
            parse_verdict(text, messages)


@pytest.mark.parametrize("reply,reason", [
    ("", "empty reply"), ("not json at all", "not JSON"), ("[1, 2]", "bad reply shape"),
    ('{"evidence": "one string", "issue": null}', "bad reply shape at evidence"),
    ('{"evidence": ["a b", "c d"], "issue": {"description": "no id"}}', "bad reply shape at issue.category"),
])
def test_malformed_replies_say_why(reply: str, reason: str) -> None:
    with pytest.raises(InvalidVerdict, match=re.escape(reason)):
        parse_verdict(reply, [Message(sender=0, to="agent 1", text="a b c d")])


def test_the_prompt_names_every_category_and_the_conversation() -> None:
    msgs = [Message(sender=0, to="agent 1", text="I edit lines 3-9"), Message(sender=1, to="agent 0", text="ok")]
    system, user = judge_messages("run-1", msgs)
    for cid in CATEGORIES:
        assert f"- {cid} (" in system["content"]
    assert "[1] agent 0 -> agent 1:\nI edit lines 3-9" in user["content"] and "run-1" in user["content"]


def test_conversation_orders_by_time_and_copes_with_missing_recipients() -> None:
    import numpy as np
    import pandas as pd

    from masgrid.families.cooper.comm_judge import conversation

    events = pd.DataFrame([
        {"run_id": "r", "seq": 5, "t": 2.0, "agent": 1, "kind": "message", "text": "second", "peers": np.array([0]),
         "text_chars": None},
        {"run_id": "r", "seq": 9, "t": 1.0, "agent": 0, "kind": "message", "text": "first", "peers": None,
         "text_chars": 9000},
        {"run_id": "r", "seq": 1, "t": 0.5, "agent": 0, "kind": "action", "text": "{}", "peers": None,
         "text_chars": None},
    ])
    msgs, capped = conversation(events)
    assert [(m.sender, m.to, m.text) for m in msgs] == [(0, "team", "first"), (1, "agent 0", "second")]
    assert capped
    assert conversation(events[events["kind"] == "action"]) == ([], False)
