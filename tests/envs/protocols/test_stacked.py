"""Several commands in one fenced block (issue 14, item 3; rule in docs/tasks/masbench.md).

The rule under test, restated here independently of masgrid/_private/envs/harness.py:
a line after a block's first starts a new command when its first word is one of the
protocol's verbs; a verb without arguments (wait, receive_messages, list_agents) counts
only when it stands alone on its line. Message and answer verbs keep the lines that follow
until the next command; verbs that take no text ignore them (the agent is told); a kv
`write_file` keeps every following line as its value. A block that held more than one
command, ignored text or command-like lines in a value gets one harness note (verb
`stacked`) before its commands run.
"""

from __future__ import annotations

import random

import pytest

from masgrid._private.actors.environment import EnvironmentHost
from masgrid._private.envs.protocols import make_protocol
from masgrid._private.envs.protocols.base import MSG_SKIPPED, STACKED_VERB, ProtocolOptions
from masgrid._private.envs.tasks import get_task
from masgrid.families.masbench.answers import parse_int_list

from .conftest import run

PARSER = lambda agent, raw: parse_int_list(raw, 2)  # noqa: E731


def block(text: str) -> str:
    return f"```\n{text}\n```"


def commands_run(outcomes) -> list[str]:
    return [o.verb for o in outcomes if o.verb and not o.harness]


def notes(outcomes) -> list[str]:
    return [o.reply for o in outcomes if o.harness and o.verb == STACKED_VERB]


# -- the three cases of the issue, each protocol ------------------------------------------

def test_broadcast_then_receive_runs_both_and_sends_only_the_message(make):
    p = make("broadcast")
    run(p, 1, "broadcast_message from one")
    out = p.apply_reply(0, block("broadcast_message hello\nreceive_messages"), None)
    assert commands_run(out) == ["broadcast_message", "receive_messages"]
    assert out[0].harness and out[0].verb == STACKED_VERB and "2 commands" in out[0].reply
    assert out[2].reply == "broadcast from Agent-1: from one"
    assert run(p, 2, "receive_messages") == ["broadcast from Agent-1: from one\nbroadcast from Agent-0: hello"]


def test_send_then_receive_runs_both(make):
    p = make("p2p")
    out = p.apply_reply(0, block("send_message 1 hello\nreceive_messages"), None)
    assert commands_run(out) == ["send_message", "receive_messages"]
    assert run(p, 1, "receive_messages") == ["from Agent-0: hello"]


@pytest.mark.parametrize("name,second,effect", [
    ("broadcast", "broadcast_message after wait", lambda p: run(p, 1, "receive_messages")[0].endswith("after wait")),
    ("p2p", "send_message 2 after wait", lambda p: run(p, 2, "receive_messages") == ["from Agent-0: after wait"]),
    ("kv", "write_file k\nafter wait", lambda p: p.files["k"].content == "after wait"),
])
def test_wait_then_command_runs_the_command(make, name, second, effect):
    p = make(name)
    out = p.apply_reply(0, block(f"wait\n{second}"), None)
    assert commands_run(out)[0] == "wait" and len(commands_run(out)) == 2
    assert len(notes(out)) == 1 and effect(p)


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_wait_ending_the_turn_skips_the_stacked_command_and_says_so(name):
    p = make_protocol(name, 3, PARSER, ProtocolOptions(wait_ends_turn=True))
    out = p.apply_reply(0, block("wait\nsubmit_result [1, 2]"), None)
    assert commands_run(out) == ["wait"]
    assert out[-1].reply == MSG_SKIPPED.format(count=1, verb="wait")
    assert not p.submitted(0)


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_submit_then_wait_records_the_list(make, name):
    p = make(name)
    out = p.apply_reply(0, block("submit_result [2, 1]\nwait"), None)
    assert commands_run(out) == ["submit_result", "wait"]
    assert all(o.ok for o in out) and p.slots[0] == [2, 1]


# -- what stays one command ---------------------------------------------------------------

@pytest.mark.parametrize("name,cmd", [("broadcast", "broadcast_message"), ("p2p", "send_message 1")])
def test_multiline_message_with_prose_starting_like_a_bare_verb_is_one_message(make, name, cmd):
    p = make(name)
    out = p.apply_reply(0, block(f"{cmd} plan:\nwait for Agent-2\nreceive_messages first, then sort"), None)
    assert commands_run(out) == [cmd.split()[0]] and not notes(out)
    assert p.rows[0].content == "plan:\nwait for Agent-2\nreceive_messages first, then sort"


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_answer_on_the_next_line_is_one_submission(make, name):
    p = make(name)
    out = p.apply_reply(0, block("submit_result\n[3, 4]"), None)
    assert commands_run(out) == ["submit_result"] and not notes(out) and p.slots[0] == [3, 4]


def test_kv_write_keeps_command_lines_in_its_value_and_says_so(make):
    p = make("kv")
    out = p.apply_reply(0, block("write_file notes\nread_file other\nwait\nlast"), None)
    assert commands_run(out) == ["write_file"]
    assert p.files["notes"].content == "read_file other\nwait\nlast"
    (note,) = notes(out)
    assert "read_file, wait" in note and "write_file value" in note


def test_kv_plain_multiline_write_has_no_note(make):
    p = make("kv")
    out = p.apply_reply(0, block("write_file plan\nline one\nline two"), None)
    assert not notes(out) and p.files["plan"].content == "line one\nline two"


def test_text_after_a_command_that_takes_none_is_named_as_ignored(make):
    p = make("broadcast")
    out = p.apply_reply(0, block("receive_messages\nand then I will sort"), None)
    assert commands_run(out) == ["receive_messages"]
    (note,) = notes(out)
    assert "ignored" in note and "and then I will sort" in note


def test_events_mark_the_note_as_a_harness_event_with_verb_stacked():
    env = EnvironmentHost("p2p", get_task("sorting").generate(3, 2, 0, mode="random"))
    records = env.apply_round(1, [(0, block("wait\nreceive_messages"), None), (1, block("wait"), None)])
    assert [(r.kind, r.verb) for r in records[0]] == [("harness", "stacked"), ("command", "wait"),
                                                      ("command", "receive_messages")]
    assert [(r.kind, r.verb) for r in records[1]] == [("command", "wait")]


# -- generated blocks against the rule ----------------------------------------------------

BARE = {"broadcast": ["wait", "receive_messages", "list_agents"], "p2p": ["wait", "receive_messages"],
        "kv": ["wait"]}
#: prose lines: none starts with a verb word unless a bare verb followed by more text
PROSE = ["more detail here", "wait for Agent-1 please", "receive_messages first", "list_agents later",
         "  indented 5 6", "", "[1, 2] maybe"]


def _gen_command(rng: random.Random, name: str, n: int) -> tuple[str, list[str], bool, bool]:
    """(verb, lines, takes following text, owns the rest of the block)."""
    options = ["bare", "submit"] + {"broadcast": ["broadcast"], "p2p": ["send"],
                                    "kv": ["write", "read", "list"]}[name]
    kind = rng.choice(options)
    if kind == "bare":
        return (verb := rng.choice(BARE[name])), [verb], False, False
    if kind == "submit":
        return "submit_result", [f"submit_result [{n}, {n + 1}]"], True, False
    if kind == "broadcast":
        return "broadcast_message", [f"broadcast_message m{n}"], True, False
    if kind == "send":
        return "send_message", [f"send_message {rng.choice([1, 2])} m{n}"], True, False
    if kind == "write":
        return "write_file", [f"write_file f{n}"], True, True
    if kind == "read":
        return "read_file", [f"read_file f{n}"], False, False
    return "list_files", ["list_files f"], False, False


VERBS = {"broadcast": {"broadcast_message"}, "p2p": {"send_message"},
         "kv": {"write_file", "read_file", "list_files", "delete_file"}}


def _starts_command(line: str, name: str) -> bool:
    word = line.strip().split(" ")[0]
    if word in BARE[name]:
        return line.strip() == word
    return word in VERBS[name] | {"submit_result"}


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_generated_stacks_follow_the_rule(name):
    rng = random.Random(f"stacked-{name}")
    for case in range(300):
        p = make_protocol(name, 3, PARSER)
        lines: list[str] = []
        expected_verbs: list[str] = []
        ignored: list[str] = []
        bodies: list[tuple[str, str]] = []  # (verb, expected text of a message / value)
        owned = kept = False
        value: list[str] = []
        for n in range(rng.randint(1, 4)):
            verb, head, takes_text, owns_rest = _gen_command(rng, name, n)
            tail = [rng.choice(PROSE) for _ in range(rng.randint(0, 2))]
            if owned:  # everything after a write_file is its value
                value += head + tail
                kept = kept or any(_starts_command(line, name) for line in head + tail)
            else:
                expected_verbs.append(verb)
                if not takes_text:
                    ignored += [t.strip() for t in tail if t.strip()]
                elif verb == "write_file":
                    value = list(tail)
                elif verb != "submit_result":
                    bodies.append((verb, "\n".join([head[0].split(" ", 2 if verb == "send_message" else 1)[-1]]
                                                   + tail).strip()))
                owned = owns_rest
            lines += head + tail
        text = "\n".join(lines)
        if owned:  # the block's trailing newlines are not part of the value
            bodies.append(("write_file", "\n".join(value).rstrip("\n")))
        out = p.apply_reply(0, block(text), None)
        assert commands_run(out) == expected_verbs, (case, text)
        note = notes(out)
        assert len(note) == (1 if len(expected_verbs) > 1 or ignored or kept else 0), (case, text)
        for line in ignored:
            assert line in note[0], (case, text)
        if name == "kv":
            written = [("write_file", row.content) for row in sorted(p.files.values(), key=lambda r: r.id)
                       if not row.path.endswith("_submission.txt")]
            assert written == [(v, b) for v, b in bodies if v == "write_file"], (case, text)
        else:
            sent = [r.content for r in p.rows if r.sender == 0 and "submitted result" not in r.content]
            per = 2 if name == "broadcast" else 1  # a broadcast inserts one row per receiver
            assert sent[::per] == [b for _, b in bodies], (case, text)

