"""`agentsnet.parser=reference`: replies read as the released AgentsNet code reads them.

The table's expected outputs were written by hand from the rules in local_reference.py /
docs/agentsnet.md ("Parser modes"), for both modes, so every row documents a difference
or a sameness. The random checks compare with separately written oracles: the message rule
as the overlapping regex `\\{.*\\}` (via a lookahead), the final-answer rule as a
character scan.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from masgrid.families.agentsnet.local_protocol import (
    EXPECT_FINAL,
    EXPECT_MESSAGES,
    LocalProtocol,
    LocalReplyValidator,
    MessageFormatError,
    parse_final_answer,
    parse_messages,
)
from masgrid.families.agentsnet.local_reference import reference_parse_final_answer, reference_parse_messages
from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet.graphs import first_names, is_agent_name

NBS = ["Ada", "Abel", "Eli"]  # the replying agent's neighbours; Leo, Leon, Elise, Linus: other pool names
R = "retry"  # no message object: the agent gets its one retry
BS = "\\"  # one backslash, to write the escape cases legibly
FENCE = "```"

# (reply, strict outcome, reference outcome); an outcome is the delivered dict or R.
TABLE: list[tuple[str, object, object]] = [
    # 1-10: plain objects, surrounding prose, fences
    ('{"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('{"Ada": "hi", "Abel": "yo"}', {"Ada": "hi", "Abel": "yo"}, {"Ada": "hi", "Abel": "yo"}),
    ("{}", {}, {}),
    ('Sure! {"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('{"Ada": "hi"} Hope this helps.', {"Ada": "hi"}, {"Ada": "hi"}),
    (f'{FENCE}json\n{{"Ada": "hi"}}\n{FENCE}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('{\n  "Ada": "hi",\n  "Abel": "yo"\n}', {"Ada": "hi", "Abel": "yo"}, {"Ada": "hi", "Abel": "yo"}),
    ('**{"Ada": "hi"}**', {"Ada": "hi"}, {"Ada": "hi"}),
    ('{"Ada": ""}', {"Ada": ""}, {"Ada": ""}),
    ('{"Ada":"1","Abel":"2","Eli":"3"}', {"Ada": "1", "Abel": "2", "Eli": "3"}, {"Ada": "1", "Abel": "2", "Eli": "3"}),
    # 11-17: prose after the object that contains a closing brace
    ('{"Ada": "hi"} (my colour is {3})', {"Ada": "hi"}, R),
    ('{"Ada": "hi"}}', {"Ada": "hi"}, R),
    ('{{"Ada": "hi"}}', {"Ada": "hi"}, R),
    (f'{FENCE}\n{{"Ada": "hi"}}\n{FENCE}\nThe }} above closes it.', {"Ada": "hi"}, R),
    ('{"Ada": "hi"} and {"all": "x"}', {"Ada": "hi"}, R),
    ('{"Ada": "use {x}"} ok', {"Ada": "use {x}"}, {"Ada": "use {x}"}),
    ('{"Ada": "use {x} please"}', {"Ada": "use {x} please"}, {"Ada": "use {x} please"}),
    # 18-24: a draft object, then the final one
    ('Draft: {"Ada": "a"} Final: {"Ada": "b"}', {"Ada": "a"}, {"Ada": "b"}),
    ('{"Ada": "a"}\n{"Abel": "b"}', {"Ada": "a"}, {"Abel": "b"}),
    ('{"Ada": "1"} {"Ada": "2"} {"Ada": "3"}', {"Ada": "1"}, {"Ada": "3"}),
    (f'{FENCE}json\n{{"Ada": "old"}}\n{FENCE}\nRevised:\n{FENCE}json\n{{"Ada": "new"}}\n{FENCE}', {"Ada": "old"},
     {"Ada": "new"}),
    ('{"Ada": "hi"}\nNext round I would send {"Leo": "x"}', {"Ada": "hi"}, {}),
    ('{"everyone": "x"} {"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('{"Ada": 1} {"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    # 25-32: keys naming agents who are not neighbours, and keys that are no agent name
    ('{"Ada": "hi", "Leo": "x"}', R, {"Ada": "hi"}),
    ('{"Leo": "x"}', R, {}),
    ('{"Leon": "me", "Abel": "yo"}', R, {"Abel": "yo"}),
    ('{"Elise": "x", "Eli": "y"}', R, {"Eli": "y"}),
    ('{"Ada-Linus": "x", "Abel": "y"}', R, {"Abel": "y"}),
    ('{"Ada-Ada": "x", "Abel": "y"}', R, R),
    ('{"Ada": "hi", "everyone": "x"}', R, R),
    ('{"ada": "hi"}', R, R),
    # 33-35
    ('{"Ada ": "hi"}', R, R),
    ('{"None": "hi"}', R, R),
    ('{"Leo": 1, "Ada": "x"}', R, R),
    # 36-44: escapes and line breaks
    ('{"Ada": "line1' + BS + 'nline2"}', {"Ada": "line1\nline2"}, R),
    ('{"Ada": "see you' + BS + 'n"}', {"Ada": "see you\n"}, R),
    ("{" + BS + 'n"Ada": "hi"' + BS + "n}", R, {"Ada": "hi"}),
    ("Thinking" + BS + "nDone." + BS + 'n{"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('{"Ada": "C:' + BS + BS + 'new"}', {"Ada": "C:" + BS + "new"}, R),
    ('{"Ada": "a' + BS + 'tb"}', {"Ada": "a\tb"}, {"Ada": "a\tb"}),
    ('{"Ada": "a\nb"}', R, R),
    ('{"Ada": "say ' + BS + '"hi' + BS + '""}', {"Ada": 'say "hi"'}, {"Ada": 'say "hi"'}),
    ('{"Ada": "caf' + BS + 'u00e9"}', {"Ada": "café"}, {"Ada": "café"}),
    # 45-53: not a message object at all, or not strings
    ('{"Ada": 3}', R, R),
    ('{"Ada": {"c": 1}}', R, R),
    ('{"Ada": null}', R, R),
    ('["Ada"]', R, R),
    ("", R, R),
    ("   ", R, R),
    ("I will wait this round.", R, R),
    ('{"Ada": "hi"', R, R),
    ('{"Ada": "hi",}', R, R),
    # 54-58
    ("{'Ada': 'hi'}", R, R),
    ('{"Ada": "1", "Ada": "2"}', {"Ada": "2"}, {"Ada": "2"}),
    ('Set {a, b}: {"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('a} {"Ada": "hi"}', {"Ada": "hi"}, {"Ada": "hi"}),
    ('Note: }{"Ada":"1","Abel":"2"}', {"Ada": "1", "Abel": "2"}, {"Ada": "1", "Abel": "2"}),
]


def _strict(text: str) -> object:
    try:
        return parse_messages(text, NBS)
    except MessageFormatError:
        return R


def _reference(text: str) -> object:
    try:
        return reference_parse_messages(text, NBS).delivered
    except MessageFormatError:
        return R


def test_the_table_covers_the_documented_cases() -> None:
    assert len(TABLE) >= 50
    assert len(TABLE) == 58 and sum(s != r for _, s, r in TABLE) == 19  # rows that tell the modes apart (docs)
    for name in ("Leo", "Leon", "Elise", "Linus", *NBS):
        assert name in first_names()  # the table's non-neighbour names are pool names


@pytest.mark.parametrize("row", range(len(TABLE)))
def test_both_modes_deliver_what_the_rules_say(row: int) -> None:
    text, strict, reference = TABLE[row]
    assert _strict(text) == strict
    assert _reference(text) == reference


def test_dropped_keys_are_reported() -> None:
    got = reference_parse_messages('{"Ada": "hi", "Leo": "x", "Ada-Linus": "y"}', NBS)
    assert got.delivered == {"Ada": "hi"} and got.dropped == ["Leo", "Ada-Linus"]
    with pytest.raises(MessageFormatError, match="everyone is not an agent name"):
        reference_parse_messages('{"everyone": "x"}', NBS)
    with pytest.raises(MessageFormatError, match="nested too deeply"):
        reference_parse_messages('{"Ada": ' + "[" * 100_000 + "]" * 100_000 + "}", NBS)


def test_agent_names_are_the_pool_and_its_double_names() -> None:
    assert is_agent_name("Ada") and is_agent_name("Ada-Linus") and is_agent_name("Linus-Ada")
    assert not is_agent_name("Ada-Ada") and not is_agent_name("ada") and not is_agent_name("Ada-Linus-Leo")
    assert not is_agent_name("Ada-") and not is_agent_name("") and not is_agent_name("Zzyzx")


# -- random replies against a separately written oracle -----------------------------------------

def _oracle_messages(text: str, neighbors: list[str]) -> object:
    """The released rule, written as the overlapping greedy regex it is (lookahead = overlap)."""
    body = text.replace("\\n", "\n")
    for match in re.finditer(r"(?=(\{.*\}))", body, re.DOTALL):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if all(is_agent_name(k) or k in neighbors for k in value) and all(isinstance(v, str) for v in value.values()):
            return {k: v for k, v in value.items() if k in neighbors}
    return R


def _random_reply(rng: random.Random) -> str:
    keys = NBS + ["Leo", "Elise", "Ada-Linus", "all", "ada", "Bob's"]
    values = ["hi", "a\\nb", "{x}", "use } here", 'q"uote', "", "tab\there"]

    def obj() -> str:
        items = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 3))}
        if rng.random() < 0.1:
            items[rng.choice(keys)] = rng.choice([1, None, ["x"]])  # type: ignore[assignment]
        text = json.dumps(items, ensure_ascii=rng.random() < 0.5)
        return text.replace(", ", ",\n") if rng.random() < 0.3 else text

    parts = [rng.choice(["Plan:", "ok", "}", "{", "{a}", "\\n", "Final:", FENCE, "\n", obj(), obj(), '{"Ada": "x"'])
             for _ in range(rng.randint(1, 6))]
    return " ".join(parts)


def test_messages_match_the_oracle_on_random_replies() -> None:
    rng = random.Random(14)
    outcomes = set()
    for _ in range(3000):
        text = _random_reply(rng)
        expected = _oracle_messages(text, NBS)
        assert _reference(text) == expected, text
        outcomes.add("retry" if expected == R else "delivered")
    assert outcomes == {"retry", "delivered"}


def _oracle_final(text: str, options: list[str]) -> object:
    """Scan each marker left to right, skip whitespace, take the first listed option the text starts with."""
    marker = "### Final Answer ###"
    at = text.find(marker)
    while at >= 0:
        rest = text[at + len(marker):]
        rest = rest[len(rest) - len(rest.lstrip()):]
        for option in options:
            if rest.startswith(option):
                return option
        at = text.find(marker, at + 1)
    return R


def _final(parse, text: str, options: list[str]) -> object:
    try:
        return parse(text, options)
    except ValueError:
        return R


GROUPS = [f"Group {c}" for c in range(1, 13)]
YES_NO = ["Yes", "No"]

# (reply, options, strict, reference), written by hand
FINAL_TABLE: list[tuple[str, list[str], object, object]] = [
    ("### Final Answer ### Group 10", GROUPS, "Group 10", "Group 1"),
    ("### Final Answer ###\nGroup 12", GROUPS, "Group 12", "Group 1"),
    ("### Final Answer ### Group 13", GROUPS, R, "Group 1"),
    ("### Final Answer ### Group 3", GROUPS, "Group 3", "Group 3"),
    ("### Final Answer ###Group 2.", GROUPS, "Group 2", "Group 2"),
    ("### Final Answer ### Group 2x", GROUPS, R, "Group 2"),
    ("### Final Answer ### group 3", GROUPS, R, R),
    ("### Final Answer ### **Group 3**", GROUPS, R, R),
    ("Group 3", GROUPS, R, R),
    ("### Final Answer ### none yet\n### Final Answer ### Group 2", GROUPS, "Group 2", "Group 2"),
    ("### Final Answer ### Yes", YES_NO, "Yes", "Yes"),
    ("### Final Answer ### Not sure", YES_NO, R, "No"),
    ("### Final Answer ### Nobody", YES_NO, R, "No"),
    ("### Final Answer ### Yesterday", YES_NO, R, "Yes"),
    ("### Final Answer ### yes", YES_NO, R, R),
    ("### Final Answer ### Elise", ["Eli", "Elise", "Leo", "None"], "Elise", "Eli"),
    ("### Final Answer ### Elise", ["Elise", "Eli", "None"], "Elise", "Elise"),
    ("### Final Answer ### Eli", ["Elise", "Eli", "None"], "Eli", "Eli"),
    ("### Final Answer ### Leon", ["Leo", "Leon", "None"], "Leon", "Leo"),
    ("### Final Answer ### Nonexistent", ["Leo", "None"], R, "None"),
    ("### Final Answer ### Ada-Linus", ["Ada", "Ada-Linus", "None"], "Ada-Linus", "Ada"),
    ("### Final Answer ### 10", ["0", "1"], R, "1"),
    ("### Final Answer ### 0", ["0", "1"], "0", "0"),
]


@pytest.mark.parametrize("row", range(len(FINAL_TABLE)))
def test_final_answers_in_both_modes(row: int) -> None:
    text, options, strict, reference = FINAL_TABLE[row]
    assert _final(parse_final_answer, text, options) == strict
    assert _final(reference_parse_final_answer, text, options) == reference


def test_final_answers_match_the_oracle_on_random_replies() -> None:
    rng = random.Random(7)
    pool = ["Eli", "Elise", "Leo", "Leon", "None", "Group 1", "Group 10", "Yes", "No", "0", "1"]
    for _ in range(3000):
        options = rng.sample(pool, rng.randint(1, 5))
        bits = [rng.choice(["### Final Answer ###", " ", "\n", "x", "**", *pool]) for _ in range(rng.randint(1, 6))]
        text = "".join(bits)
        assert _final(reference_parse_final_answer, text, options) == _oracle_final(text, options), (text, options)


# -- the mode inside the protocol, the validator and the task -------------------------------------

def _instance(parser: str, task: str = "agentsnet/coloring"):
    return get_task(task).generate(8, 1, 0, graph="ba", parser=parser)


def test_protocol_delivers_as_the_mode_says() -> None:
    inst = _instance("reference")
    sender = next(i for i, x in enumerate(inst.inputs) if len(x["neighbors"]) >= 2)
    nb, other = inst.inputs[sender]["neighbors"][:2]
    stranger = next(n for n in inst.meta["names"] if n not in inst.inputs[sender]["neighbors"])
    reply = f'Draft {{"{nb}": "DRAFT-TEXT"}}\nFinal {{"{nb}": "FINAL-TEXT", "{stranger}": "lost"}}'
    delivered = {}
    for parser in ("strict", "reference"):
        proto = LocalProtocol(8, lambda a, raw: raw)
        proto.attach(_instance(parser))
        proto.round = 1
        (outcome,) = proto.apply_reply(sender, reply, None)
        inbox = proto.end_round()
        receiver = inst.meta["names"].index(nb)
        delivered[parser] = (outcome.messages_sent, outcome.reply, "FINAL-TEXT" in inbox[receiver][0],
                             "DRAFT-TEXT" in inbox[receiver][0], "lost" in "".join(m[0] for m in inbox.values()),
                             other in inbox[sender][0])
    assert delivered["strict"] == (1, "", False, True, False, True)
    assert delivered["reference"] == (1, f"not delivered, not a neighbour: {stranger}", True, False, False, True)


def test_validator_and_task_follow_the_mode() -> None:
    strict = LocalReplyValidator(["Ada"], GROUPS)
    reference = LocalReplyValidator(["Ada"], GROUPS, "reference")
    assert strict(EXPECT_MESSAGES, '{"Ada": "x", "Leo": "y"}') is not None
    assert reference(EXPECT_MESSAGES, '{"Ada": "x", "Leo": "y"}') is None
    assert strict(EXPECT_MESSAGES, '{"Ada": "a' + BS + 'nb"}') is None
    assert reference(EXPECT_MESSAGES, '{"Ada": "a' + BS + 'nb"}') is not None
    assert strict(EXPECT_FINAL, "### Final Answer ### Group 13") is not None
    assert reference(EXPECT_FINAL, "### Final Answer ### Group 13") is None
    task = get_task("agentsnet/coloring")
    inst = _instance("reference")
    groups = inst.params["groups"]
    assert task.parse_answer(inst, 0, f"### Final Answer ### Group {groups}") == ("Group 1" if groups >= 10 else
                                                                                  f"Group {groups}")
    assert task.parse_answer(_instance("strict"), 0, f"### Final Answer ### Group {groups}") == f"Group {groups}"
    with pytest.raises(ValueError, match="agentsnet.parser"):
        task.generate(8, 1, 0, graph="ba", parser="lenient")
