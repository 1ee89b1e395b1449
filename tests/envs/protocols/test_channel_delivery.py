"""What each channel outcome does to a message, protocol by protocol (docs/channel.md, the
table "What a message and a round are"), with a scripted channel that hands out chosen fates."""

from __future__ import annotations

from masgrid._private.envs.channel import Fate
from masgrid._private.envs.protocols import ProtocolOptions, make_protocol

from .conftest import int_list_parser, run

ON_TIME = Fate(lost=False, delay=0, copies=1, reordered=False)
LOST = Fate(lost=True, delay=0, copies=0, reordered=False)
LATE = Fate(lost=False, delay=2, copies=1, reordered=False)
TWICE = Fate(lost=False, delay=0, copies=2, reordered=False)
AHEAD = Fate(lost=False, delay=0, copies=1, reordered=True)


class Scripted:
    """A channel whose fates are given in sending order; it remembers the links asked."""

    def __init__(self, *fates: Fate) -> None:
        self.fates = list(fates)
        self.asked: list[tuple[int, int]] = []

    def fate(self, sender: int, recipient: int) -> Fate:
        self.asked.append((sender, recipient))
        return self.fates.pop(0)


def with_channel(name: str, channel: Scripted, n: int = 3, options: ProtocolOptions | None = None):
    proto = make_protocol(name, n, int_list_parser(2), options)
    proto.channel = channel
    return proto


def test_p2p_outcomes() -> None:
    p = with_channel("p2p", Scripted(ON_TIME, LOST, LATE, TWICE, AHEAD))
    p.begin_round(1)
    for text in ("a", "b", "c", "d", "e"):
        assert run(p, 0, f"send_message 2 {text}") == ["delivered to Agent-2"]  # the sender cannot tell
    # round 1: a; d twice; e ahead of them all (reordered, same round); b lost; c due in round 3
    assert run(p, 2, "receive_messages") == ["from Agent-0: e\nfrom Agent-0: a\nfrom Agent-0: d\nfrom Agent-0: d"]
    p.begin_round(2)
    assert run(p, 2, "receive_messages") == ["no new messages"]
    p.begin_round(3)
    assert run(p, 2, "receive_messages") == ["from Agent-0: c"]
    assert p.channel.asked == [(0, 2)] * 5


def test_broadcast_each_receiver_is_one_message_and_lost_ones_are_not_delivered() -> None:
    p = with_channel("broadcast", Scripted(LOST, ON_TIME))
    p.begin_round(1)
    out = p.apply_reply(0, "```\nbroadcast_message hi\n```", None)[0]
    assert out.deliveries == 1 and out.extra["peers"] == [2]
    note = out.extra["channel"]
    assert (note.to, note.outcome, note.round) == ([1, 2], ["lost", "delivered"], [None, 1])
    assert run(p, 1, "receive_messages") == ["no new messages"]
    assert run(p, 2, "receive_messages") == ["broadcast from Agent-0: hi"]


def test_strict_rounds_keep_the_readable_rows_a_prefix() -> None:
    p = with_channel("p2p", Scripted(LATE, ON_TIME, ON_TIME), options=ProtocolOptions.strict_rounds())
    p.begin_round(1)
    run(p, 0, "send_message 2 late")  # readable from round 1 + 1 + 2 = 4
    run(p, 1, "send_message 2 now")  # readable from round 2
    p.close_round()
    p.begin_round(2)
    run(p, 0, "send_message 2 next")  # readable from round 3
    assert run(p, 2, "receive_messages") == ["from Agent-1: now"]
    p.begin_round(3)
    assert run(p, 2, "receive_messages") == ["from Agent-0: next"]
    p.begin_round(4)
    assert run(p, 2, "receive_messages") == ["from Agent-0: late"]


def test_kv_writes() -> None:
    p = with_channel("kv", Scripted(LOST, LATE, AHEAD, ON_TIME, TWICE, ON_TIME))
    p.begin_round(1)
    run(p, 0, "write_file lost\nx")
    run(p, 0, "write_file late\nx")
    run(p, 0, "write_file k\nfrom ahead")  # reordered: applied at the round's end, after the next write
    run(p, 1, "write_file k\nfrom on time")
    assert set(p.files) == {"k"} and p.files["k"].content == "from on time"
    p.close_round()
    assert p.files["k"].content == "from ahead"
    p.begin_round(2)
    run(p, 1, "write_file d\nfirst")  # duplicated: applied now and again at the start of round 3
    run(p, 2, "write_file d\nsecond")
    assert p.files["d"].content == "second"
    p.begin_round(3)
    assert p.files["d"].content == "first" and p.files["late"].updated == 3
    assert "lost" not in p.files
    assert p.channel.asked == [(0, -1)] * 3 + [(1, -1), (1, -1), (2, -1)]
