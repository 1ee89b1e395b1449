"""The LOCAL protocol: message parsing, validation prompts, synchronous delivery."""

from __future__ import annotations

import json

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
from masgrid._private.envs.tasks import get_task


def test_parse_messages() -> None:
    assert parse_messages('{"Bo": "hi", "Cy": "yo"}', ["Bo", "Cy"]) == {"Bo": "hi", "Cy": "yo"}
    text = 'Plan: tell Bo {first}.\n```json\n{"Bo": "hello"}\n``` done {not json}'
    assert parse_messages(text, ["Bo", "Cy"]) == {"Bo": "hello"}
    assert parse_messages("{}", ["Bo"]) == {}
    with pytest.raises(MessageFormatError, match="not one of your neighbours"):
        parse_messages('{"Zed": "hi"}', ["Bo"])
    with pytest.raises(MessageFormatError, match="string"):
        parse_messages('{"Bo": 3}', ["Bo"])
    with pytest.raises(MessageFormatError, match="no JSON"):
        parse_messages('{"Bo": "unterminated', ["Bo"])
    with pytest.raises(MessageFormatError):
        parse_messages(None, ["Bo"])


def test_parse_final_answer_prefers_longest_option() -> None:
    options = [f"Group {i}" for i in range(1, 12)]
    assert parse_final_answer("so... ### Final Answer ### Group 10", options) == "Group 10"
    assert parse_final_answer("### Final Answer ###\nGroup 2.", options) == "Group 2"
    with pytest.raises(ValueError):
        parse_final_answer("Group 2", options)  # the marker is required
    with pytest.raises(ValueError):
        parse_final_answer("### Final Answer ### Group 12", options)


def test_validator_returns_retry_prompts() -> None:
    check = LocalReplyValidator(["Bo"], ["Yes", "No"])
    assert check(EXPECT_MESSAGES, '{"Bo": "x"}') is None
    assert "Zed" in check(EXPECT_MESSAGES, '{"Zed": "x"}')
    assert check(EXPECT_FINAL, "### Final Answer ### No") is None
    assert check(EXPECT_FINAL, "No") is not None


def _protocol(rounds: int = 2) -> tuple[LocalProtocol, list[str], list[list[str]]]:
    task = get_task("agentsnet/leader_election")
    inst = task.generate(4, 1, 1, graph="ba", rounds=rounds)
    proto = LocalProtocol(4, lambda a, raw: raw)
    proto.attach(inst)
    return proto, [x["name"] for x in inst.inputs], [x["neighbors"] for x in inst.inputs]


def test_synchronous_delivery_silent_neighbours_and_final_prompt() -> None:
    proto, names, nbs = _protocol(rounds=2)
    opening = proto.opening()
    assert set(opening) == {0, 1, 2, 3} and "JSON" in opening[0][0]
    proto.round = 1
    speaker = 0
    for i in range(4):
        # only agent 0 speaks (to every neighbour); the others send invalid output
        text = json.dumps({nb: f"hello {nb} from {names[i]}" for nb in nbs[i]}) if i == speaker else "no json"
        proto.apply_reply(i, text, None)
    delivered = proto.end_round()
    for i in range(4):
        text = delivered[i][0]
        assert "1 round(s) of communication remain" in text
        if names[speaker] in nbs[i]:
            assert f"hello {names[i]} from {names[speaker]}" in text
        silent = [nb for nb in nbs[i] if nb != names[speaker]]
        if silent:
            assert "No message arrived this round from: " + ", ".join(silent) in text
    proto.round = 2
    for i in range(4):
        proto.apply_reply(i, "{}", None)
    final = proto.end_round()[0][0]
    assert "### Final Answer ###" in final and "'Yes'" not in final and "Yes, No" in final
    proto.round = 3
    out = proto.apply_reply(0, "### Final Answer ### Yes", None)
    assert out[0].submitted == "Yes" and proto.slots[0] == "Yes"
    assert proto.apply_reply(1, "Yes", None)[0].ok is False and proto.slots[1] is None
    assert proto.end_round() == {}


def test_chain_of_thought_switch() -> None:
    task = get_task("agentsnet/consensus")
    prompts = {}
    for cot in (True, False):
        inst = task.generate(4, 1, 0, graph="ws", rounds=1, cot=cot)
        proto = LocalProtocol(4, lambda a, raw: raw)
        proto.attach(inst)
        proto.round = 1
        for i in range(4):
            proto.apply_reply(i, "{}", None)
        prompts[cot] = proto.opening()[0][0] + proto.end_round()[0][0]
    assert prompts[True].count("reason step by step") == 2
    assert "step by step" not in prompts[False] and "### Final Answer ###" in prompts[False]
