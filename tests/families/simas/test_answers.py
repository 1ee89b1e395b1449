"""Final-answer parsing on a table of phrasings, and against an independent formatter."""

from __future__ import annotations

import random

import pytest

from masgrid.families.simas.answers import parse_choice, parse_integer

CHOICE = [
    ("Final answer: C", "C"),
    ("final answer - b", None),  # a lower-case letter outside brackets is not an answer
    ("Final Answer: (b)", "B"),
    ("The answer is **D**.", "D"),
    ("After discussing B at length, the correct answer is A.", "A"),
    ("I think B is tempting.\nFinal answer: C", "C"),
    ("Answer: D", "D"),
    ("\\boxed{A}", "A"),
    ("C", "C"),
    ("(B)", "B"),
    ("Option D.", "D"),
    ("We choose option B", "B"),
    ("The answer is a matter of debate.", None),
    ("Final answer: E", None),  # only A-D exist
    ("I am not sure.", None),
    ("", None),
    ("Final answer: B\n...on reflection, final answer: D", "D"),
]

INTEGER = [
    ("Final answer: 42", 42),
    ("The answer is 1,024.", 1024),
    ("\\boxed{301}", 301),
    ("So we get $\\boxed{17}$.", 17),
    ("Final answer: -3", -3),
    ("Answer: 24.0", 24),
    ("120", 120),
    ("Final answer: 2.5", None),
    ("It could be 4 or 5.", None),
    ("Final answer: twelve", None),
]


@pytest.mark.parametrize(("text", "expected"), CHOICE)
def test_choice_phrasings(text: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            parse_choice(text, 4)
    else:
        assert parse_choice(text, 4) == expected


@pytest.mark.parametrize(("text", "expected"), INTEGER)
def test_integer_phrasings(text: str, expected: int | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            parse_integer(text)
    else:
        assert parse_integer(text) == expected


def test_random_replies_round_trip() -> None:
    """Replies built from templates in the test (reasoning that mentions other options, then
    a concluding phrase) always yield the concluding answer."""
    rng = random.Random(7)
    closers = ["Final answer: {a}", "The answer is {a}.", "So the final answer is ({a})", "Answer: **{a}**"]
    for _ in range(500):
        a, decoy = rng.choice("ABCD"), rng.choice("ABCD")
        text = f"Option {decoy} looks plausible at first, and so does {decoy}.\n" + rng.choice(closers).format(a=a)
        assert parse_choice(text, 4) == a
        value = rng.randint(-999, 99_999)
        shown = f"{value:,}" if rng.random() < 0.5 else str(value)
        closer = rng.choice(["Final answer: {v}", "The answer is {v}.", "\\boxed{{{v}}}"]).format(v=shown)
        assert parse_integer(f"Trying {rng.randint(0, 9)} first fails.\n{closer}") == value
