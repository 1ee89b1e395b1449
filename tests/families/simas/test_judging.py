"""The judge's reply parser and verdict rules against a computation written here from the
protocol (appendix C.2 with our changes: blind, both orders, a win needs both orders)."""

from __future__ import annotations

import json
import random

import pytest

from masgrid.families.simas.datasets import Question
from masgrid.families.simas.judging import (JudgeFormatError, combine, judge_messages, parse_reply, prompt_hash,
                                              verdict)

CRIT = ["Correctness", "Time complexity", "Readability"]


def reply(a: dict, b: dict, winner: str = "A", **extra: object) -> str:
    side = lambda s: {c: {"score": v, "reason": "why"} for c, v in s.items()}  # noqa: E731
    return json.dumps({"A": side(a), "B": side(b), "winner": winner, "justification": "because", **extra})


@pytest.mark.parametrize("seed", range(200))
def test_random_pairs_against_independent_rule(seed: int) -> None:
    rng = random.Random(seed)
    crit = rng.sample(["c1", "c2", "c3", "c4", "c5", "c6"], rng.randint(1, 6))
    simas = {order: {c: rng.randint(1, 10) for c in crit} for order in ("s", "c")}
    cot = {order: {c: rng.randint(1, 10) for c in crit} for order in ("s", "c")}
    said = {order: rng.choice(["A", "B", "tie"]) for order in ("s", "c")}
    # order simas_first: A = SIMAS; order cot_first: A = CoT
    v1 = verdict("simas_first", *parse_reply(reply(simas["s"], cot["s"], said["s"]), crit))
    v2 = verdict("cot_first", *parse_reply(reply(cot["c"], simas["c"], said["c"]), crit))
    name1 = {"A": "simas", "B": "cot", "tie": "tie"}[said["s"]]
    name2 = {"A": "cot", "B": "simas", "tie": "tie"}[said["c"]]
    assert (v1.winner, v2.winner) == (name1, name2)
    both = combine(v1, v2)
    assert both.winner == (name1 if name1 == name2 else "tie")
    assert both.simas_score == pytest.approx((sum(simas["s"].values()) + sum(simas["c"].values())) / 2)
    assert both.cot_score == pytest.approx((sum(cot["s"].values()) + sum(cot["c"].values())) / 2)


def test_always_a_is_always_a_tie() -> None:
    rng = random.Random(1)
    for _ in range(50):
        a, b = ({c: rng.randint(1, 10) for c in CRIT} for _ in range(2))
        v1 = verdict("simas_first", *parse_reply(reply(a, b, "A"), CRIT))
        v2 = verdict("cot_first", *parse_reply(reply(b, a, "A"), CRIT))
        assert combine(v1, v2).winner == "tie"


def test_fenced_json_and_criterion_case_are_accepted() -> None:
    text = "```json\n" + reply({"correctness": 8, "time complexity": 7, "READABILITY": 6}, dict(zip(CRIT, (1, 2, 3)))) + "\n```"
    a, b, winner, why = parse_reply(text, CRIT)
    assert a == {"Correctness": 8, "Time complexity": 7, "Readability": 6} and sum(b.values()) == 6 and winner == "A"


GOOD = dict(zip(CRIT, (5, 5, 5)))


@pytest.mark.parametrize("text, problem", [
    ("", "empty"),
    ("Answer A wins with 8/10.", "not valid JSON"),
    ("Here you go: " + reply(GOOD, GOOD), "not valid JSON"),  # text around the JSON: not guessed at
    ("[1, 2]", "not an object"),
    (reply({**GOOD, "Correctness": 11}, GOOD), "less than or equal to 10"),
    (reply({**GOOD, "Correctness": 0}, GOOD), "greater than or equal to 1"),
    (reply({**GOOD, "Correctness": 7.5}, GOOD), "valid integer"),
    (reply({**GOOD, "Correctness": "8"}, GOOD), "valid integer"),
    (reply({"Correctness": 5, "Readability": 5}, GOOD), "no score for Time complexity"),
    (reply(GOOD, {**GOOD, "Style": 4}), "unknown criteria style"),
    (reply(GOOD, GOOD, winner="first"), "winner"),
    (json.dumps({"A": {}, "winner": "A", "justification": "x"}), "B"),
])
def test_malformed_replies(text: str, problem: str) -> None:
    with pytest.raises(JudgeFormatError, match=problem):
        parse_reply(text, CRIT)


def test_prompt_is_blind_and_hashed() -> None:
    q = Question(id="coding/1", dataset="coding", subject="algorithm", text="Sum two.", answer=None, criteria=CRIT,
                 language="Python", constraints=["O(n)"])
    msgs = judge_messages(q, "first answer", "second answer")
    text = "\n".join(m["content"] for m in msgs)
    assert "Answer A:\nfirst answer" in text and "Answer B:\nsecond answer" in text and "- Time complexity" in text
    assert "Programming language: Python" in text and "Constraints: O(n)" in text
    assert not any(w in text.lower() for w in ("simas", "cot", "chain-of-thought", "multi-agent"))
    assert len(prompt_hash()) == 12 and prompt_hash() == prompt_hash()
