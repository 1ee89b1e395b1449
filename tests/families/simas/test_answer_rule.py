"""The final-answer rule (docs/tasks/simas.md) on a table of phrasings and on random replies.

Every row is checked twice: against the expected column, and against the oracle
(answer_oracle.py), a second implementation of the same rule written apart from the
parser. A row's expected value is an answer, AMB (several different answers: flagged, not
guessed) or BAD (unparsable, with a reason).
"""

from __future__ import annotations

import random

import pytest

from masgrid.families.simas.answers import AnswerError, parse_choice, parse_integer, read_answer
from tests.families.simas.answer_oracle import oracle

AMB, BAD = "ambiguous", "unparsable"

CHOICE: list[tuple[str, object]] = [
    # the issue's examples
    ("**Final Answer:** B", "B"),
    ("Final answer: **(C)**", "C"),
    ("**Final answer: (C)**", "C"),
    ("`C`", "C"),
    ("[C]", "C"),
    ("<C>", "C"),
    ("I think the answer is B.\nOn reflection:\n\\boxed{C}", "C"),
    ("Final answer: C\n(If g were 10 the answer is B.)", "C"),
    ("The answer is A or B.", AMB),
    ("\\boxed{\\text{C}}", "C"),
    ("The correct option is C) 42", "C"),
    # emphasis
    ("Final answer: *D*", "D"),
    ("Final answer: _D_", "D"),
    ("Final answer: ***A***", "A"),
    ("__Final answer:__ B", "B"),
    ("*Final answer:* C", "C"),
    ("Final answer: `B`", "B"),
    ("### Final Answer\nD", "D"),
    ("## Answer\n(B)", "B"),
    ("**Answer:** A", "A"),
    ("The answer is **D**.", "D"),
    # LaTeX
    ("$\\boxed{B}$", "B"),
    ("\\[\\boxed{\\textbf{A}}\\]", "A"),
    ("So the answer is \\(\\text{C}\\).", "C"),
    ("The answer is $C$.", "C"),
    ("Final answer: \\(\\mathrm{D}\\)", "D"),
    ("\\boxed{(B)}", "B"),
    ("\\boxed{B or C}", AMB),
    ("We get \\boxed{\\text{E}}", BAD),  # only A-D exist
    # brackets
    ("Final answer: (C)", "C"),
    ("Final answer: [C]", "C"),
    ("Final answer: <C>", "C"),
    ("Final answer: C)", "C"),
    ("Final answer: {C}", "C"),
    ("Final answer: (c)", "C"),
    ("Final answer: [d]", "D"),
    ("Final answer: C) 42 N", "C"),
    ("Final answer: (B) the second one", "B"),
    ("The answer is C: the ratio doubles.", "C"),
    ("Final answer - b", BAD),  # a lower-case letter outside brackets is not an answer
    # alternatives
    ("Final answer: A or B", AMB),
    ("Final answer: A and C", AMB),
    ("Final answer: B/C", AMB),
    ("Final answer: A, C", AMB),
    ("Final answer: either B or D", AMB),
    ("Final answer: C or C", "C"),
    ("Final answer: (A) & (B)", AMB),
    ("The answer is B and, after all, the final answer: D", "D"),
    ("The answer is A or B.\nFinal answer: B", "B"),
    # negations
    ("Not B, the answer is C.", "C"),
    ("The answer is not B but C.", "C"),
    ("The answer is C, not B.", "C"),
    ("The answer is not B, C.", "C"),
    ("Final answer: not A", BAD),
    ("The answer is C. The answer is not B.", "C"),
    ("Final answer: not A, not B, D", "D"),
    ("It is not B; the correct answer is A.", "A"),
    # later statements and asides
    ("Final answer: B\n...on reflection, final answer: D", "D"),
    ("Final answer: A\nIf we ignored friction, the answer is B.", "A"),
    ("The answer is C. If g were 10 the answer is B.", "C"),
    ("Suppose the field doubled: the answer is B.", "B"),  # only a conditional statement: it decides
    ("If I had to choose, the answer is C.", "C"),
    ("Assuming no friction, the answer is A. Final answer: D", "D"),
    ("\\boxed{A}\nFinal answer: C", "C"),
    ("Final answer: \\boxed{B}\nI would also accept \\boxed{C}.", "B"),
    ("- **Answer**: C", "C"),
    ("The correct answer is: **B) 42 J**", "B"),
    ("FINAL ANSWER: D", "D"),
    ("Final Answer\n\nThe answer is C.", "C"),
    ("Final answer: C\nI would also accept \\boxed{B}.", "C"),
    ("The answer is B.\nAnswer: D", "D"),
    ("After discussing B at length, the correct answer is A.", "A"),
    ("I think B is tempting.\nFinal answer: C", "C"),
    ("We choose option B", "B"),
    ("I pick (d).", "D"),
    ("I go with A.", "A"),
    ("The best choice is D.", "D"),
    ("My answer would be B.", "B"),
    ("The final answer is C because B violates conservation.", "C"),
    ("Final answer: I think C", "C"),
    ("Final answer: probably B", "B"),
    ("Final answer: Option B", "B"),
    ("Final answer: option (a)", "A"),
    ("Final answer: it's D", "D"),
    # bare answers and prose
    ("C", "C"),
    ("(B)", "B"),
    ("Option D.", "D"),
    ("Discussion first.\nB", "B"),
    ("We agreed on it.\n**C**", "C"),
    ("A or D", AMB),
    ("The answer is a matter of debate.", BAD),
    ("Final answer: E", BAD),
    ("I am not sure.", BAD),
    ("", BAD),
    ("   \n  ", BAD),
    ("Final answer: see above", BAD),
    ("The answer is I think C", "C"),
    ("Final answer: C1", BAD),
]

INTEGER: list[tuple[str, object]] = [
    ("Final answer: 42", 42),
    ("Final answer: **17**", 17),
    ("Final answer: *17*", 17),
    ("Final answer: `17`", 17),
    ("The answer is 1,024.", 1024),
    ("Final answer: 1,000", 1000),
    ("Final answer: 1 000", 1000),
    ("Final answer: 1_000", 1000),
    ("Final answer: 1\\,000", 1000),
    ("Final answer: 1.000", BAD),  # 1 or 1000? refused
    ("Final answer: 12.000", BAD),
    ("Final answer: 1,000.0", 1000),
    ("Final answer: 24.0", 24),
    ("Answer: 24.00", 24),
    ("Final answer: 2.5", BAD),
    ("Final answer: -3", -3),
    ("Final answer: +3", 3),
    ("Final answer: \u22123", -3),
    ("Final answer: 3/4", BAD),
    ("Final answer: 8/4", 2),
    ("Final answer: \\frac{3}{4}", BAD),
    ("Final answer: \\frac{12}{3}", 4),
    ("\\boxed{301}", 301),
    ("So we get $\\boxed{17}$.", 17),
    ("The answer is \\(17\\)", 17),
    ("The answer is $17$.", 17),
    ("\\[\\boxed{\\text{17}}\\]", 17),
    ("The answer is 2^4 + 1 = 17", 17),
    ("The answer is x = 17.", 17),
    ("Final answer: m + n = 25", 25),
    ("The answer is 17 = 16 + 1.", 17),
    ("Final answer: 2^4 + 1", BAD),  # an expression, not a number
    ("Final answer: 16 = 17", BAD),
    ("Final answer: 17 or 18", AMB),
    ("Final answer: either 17 or 18", AMB),
    ("Final answer: 17, 18", AMB),
    ("Final answer: 17 and 18", AMB),
    ("Final answer: 17, not 18", 17),
    ("Not 18; the answer is 17.", 17),
    ("The answer is not 18 but 17.", 17),
    ("Final answer: 17\nIf we used g = 10, the answer is 20.", 17),
    ("The answer is 12. If the side were 5 the answer is 25.", 12),
    ("I thought the answer is 5.\n\\boxed{7}", 7),
    ("\\boxed{7}\nFinal answer: 9", 9),
    ("Final answer: $\\boxed{204}$", 204),
    ("Final answer: \\boxed{204}\nIf the radius were 3 the answer is \\boxed{99}.", 204),
    ("Final answer: 17 because 3 divides 51", 17),
    ("Final answer: 17 (mod 1000)", 17),
    ("The answer is 17 degrees.", 17),
    ("Final answer: 120.", 120),
    ("120", 120),
    ("Lots of work.\n204", 204),
    ("(204)", 204),
    ("Final answer: twelve", BAD),
    ("It could be 4 or 5.", BAD),
    ("Final answer: see above", BAD),
    ("", BAD),
    ("Final answer: 0", 0),
    ("Final answer: 007", 7),
    ("Final answer: 2.5 or 3.5", AMB),
    ("Final answer: 1,0000", AMB),  # 1 and 0000: a bad grouping reads as two numbers
    ("Final answer: 1 0000", 1),  # no group of three after the space: the number ends at 1
    ("The answer is 1,000, not 2,000.", 1000),
]

assert len(CHOICE) + len(INTEGER) >= 150


def _expect(text: str, n_choices: int | None) -> object:
    r = read_answer(text, n_choices)
    return r.value if r.ok else r.status


@pytest.mark.parametrize(("text", "expected"), CHOICE)
def test_choice_table(text: str, expected: object) -> None:
    assert _expect(text, 4) == expected
    status, value = oracle(text, 4)
    assert (value if status == "ok" else status) == expected, "the oracle disagrees"


@pytest.mark.parametrize(("text", "expected"), INTEGER)
def test_integer_table(text: str, expected: object) -> None:
    assert _expect(text, None) == expected
    status, value = oracle(text, None)
    assert (value if status == "ok" else status) == expected, "the oracle disagrees"


def test_public_functions_keep_their_interface() -> None:
    assert parse_choice("Final answer: C", 4) == "C" and parse_integer("Final answer: 17") == 17
    with pytest.raises(ValueError) as info:  # AnswerError is a ValueError: callers still catch it
        parse_choice("The answer is A or B.", 4)
    assert isinstance(info.value, AnswerError) and info.value.ambiguous
    assert info.value.reading.candidates == ("A", "B") and "several answers" in str(info.value)
    with pytest.raises(AnswerError) as unparsable:
        parse_integer("Final answer: 1.000")
    assert not unparsable.value.ambiguous and "1.000" in str(unparsable.value)
    assert read_answer("Final answer: C\n(If g were 10 the answer is B.)", 4).source == "final"


# -- random compositions ------------------------------------------------------------------------
CHATTER = [
    "Let me weigh the options.", "Agent_2 argued for {d}, and option {d} looked good at first.",
    "We computed {n} earlier, which was wrong.", "Nobody disagreed.", "Step 1: read the question.",
    "Consider {d} versus {d}.", "The value {n} appears in the problem.", "I considered {n} and {n}.",
    "This is a hard one!", "Summary of the discussion:", "", "Option {d} fails the units check.",
    "Honestly, {d} is tempting; still, it is wrong.", "Recall that 2 * 3 = 6.",
]
SUFFIX = ["", "Thanks, everyone.", "That concludes the discussion.", "Hope this helps!", "(Units: newtons.)"]
CHOICE_FORMS = ["{x}", "({x})", "**{x}**", "`{x}`", "[{x}]", "<{x}>", "{x})", "$\\text{{{x}}}$", "({l})", "option {x}"]
CHOICE_STATEMENTS = [
    "Final answer: {a}", "**Final Answer:** {a}", "The answer is {a}.", "The correct option is {a}.",
    "\\boxed{{{a}}}", "Answer: {a}", "So the final answer is {a}.", "I choose {a}.", "Final answer: \\boxed{{{a}}}",
    "### Final Answer\n{a}",
]
INT_FORMS = ["{v}", "**{v}**", "${v}$", "\\({v}\\)", "{comma}", "{space}", "{v}.0", "x = {v}"]
INT_STATEMENTS = ["Final answer: {a}", "The answer is {a}.", "\\boxed{{{a}}}", "Answer: {a}", "**Final answer:** {a}",
                  "Final answer: $\\boxed{{{a}}}$", "If the side were 3, the answer is {a}.", "## Answer\n{a}"]


def _choice_form(rng: random.Random, letter: str) -> str:
    return rng.choice(CHOICE_FORMS).format(x=letter, l=letter.lower())


def _int_form(rng: random.Random, v: int) -> str:
    form = rng.choice(INT_FORMS)
    if v < 0 and form in ("{space}",):
        form = "{v}"
    return form.format(v=v, comma=f"{v:,}", space=f"{v:,}".replace(",", " "))


def _reply(rng: random.Random, statements: list[str]) -> str:
    lines = [rng.choice(CHATTER).format(d=rng.choice("ABCD"), n=rng.randint(0, 999)) for _ in range(rng.randint(0, 4))]
    lines += statements
    lines += [rng.choice(SUFFIX) for _ in range(rng.randint(0, 2))]
    return "\n".join(lines)


def test_random_choice_replies_agree_with_the_oracle() -> None:
    rng = random.Random(2511)
    outcomes = {"ok": 0, "ambiguous": 0, "unparsable": 0}
    for _ in range(3000):
        statements = []
        for _ in range(rng.randint(0, 3)):
            letter = rng.choice("ABCDE")
            stated = _choice_form(rng, letter)
            roll = rng.random()
            if roll < 0.15:
                stated += f" or {_choice_form(rng, rng.choice('ABCD'))}"
            elif roll < 0.3:
                stated = f"not {rng.choice('ABCD')}, {stated}"
            template = rng.choice(CHOICE_STATEMENTS)
            if rng.random() < 0.15:
                template = "If we ignored drag, " + template[0].lower() + template[1:]
            statements.append(template.format(a=stated))
        text = _reply(rng, statements)
        mine = read_answer(text, 4)
        status, value = oracle(text, 4)
        assert (mine.status, mine.value) == (status, value), repr(text)
        outcomes[status] += 1
    assert min(outcomes.values()) > 100, outcomes  # every outcome is exercised


def test_random_integer_replies_agree_with_the_oracle() -> None:
    rng = random.Random(2512)
    outcomes = {"ok": 0, "ambiguous": 0, "unparsable": 0}
    for _ in range(3000):
        statements = []
        for _ in range(rng.randint(0, 3)):
            v = rng.choice([rng.randint(0, 999), rng.randint(1000, 999_999), -rng.randint(1, 99)])
            stated = _int_form(rng, v)
            roll = rng.random()
            if roll < 0.12:
                stated += f" or {rng.randint(0, 999)}"
            elif roll < 0.22:
                stated = f"{stated}, not {rng.randint(0, 999)}"
            elif roll < 0.3:
                stated = f"{rng.randint(1, 9)}.{rng.randint(1, 9)}"
            elif roll < 0.36:
                stated = f"{rng.randint(1, 9)}.000"
            elif roll < 0.42:
                a, b = rng.randint(1, 12), rng.randint(1, 12)
                stated = f"\\frac{{{a * b if rng.random() < 0.5 else a}}}{{{b}}}"
            statements.append(rng.choice(INT_STATEMENTS).format(a=stated))
        text = _reply(rng, statements)
        mine = read_answer(text, None)
        status, value = oracle(text, None)
        assert (mine.status, mine.value) == (status, value), repr(text)
        outcomes[status] += 1
    assert min(outcomes.values()) > 100, outcomes


#: issue 25's examples through the public functions (the parser before this rule: B ->
#: unparsable, 17 -> unparsable, [C] / `C` / <C> -> unparsable, boxed C after "the answer is
#: B" -> B, the aside's B over the final line, "A or B" -> A, 2^4 + 1 = 17 -> 2, 1 000 -> 1,
#: \boxed{\text{C}} / \(17\) / "C) 42" -> unparsable)
ISSUE = [
    ("**Final Answer:** B", 4, "B"), ("Final answer: **17**", None, 17), ("**Final answer: (C)**", 4, "C"),
    ("`C`", 4, "C"), ("[C]", 4, "C"), ("<C>", 4, "C"),
    ("The answer is B at first sight.\nChecking again: \\boxed{C}", 4, "C"),
    ("Final answer: C\nIf g were 10 the answer is B.", 4, "C"),
    ("The answer is A or B", 4, AMB), ("The answer is 2^4 + 1 = 17", None, 17), ("Final answer: 1 000", None, 1000),
    ("\\boxed{\\text{C}}", 4, "C"), ("The answer is \\(17\\)", None, 17), ("The correct option is C) 42", 4, "C"),
]


@pytest.mark.parametrize(("text", "n", "expected"), ISSUE)
def test_issue_examples(text: str, n: int | None, expected: object) -> None:
    parse = (lambda t: parse_choice(t, n)) if n else parse_integer
    if expected == AMB:
        with pytest.raises(AnswerError, match="several answers"):
            parse(text)
    else:
        assert parse(text) == expected
