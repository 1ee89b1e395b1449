"""Round semantics switches: MAS-Bench defaults unchanged, SILO-Bench appendix A.5 when asked."""

from __future__ import annotations

import pytest

from masgrid._private.envs.protocols import ProtocolOptions, make_protocol
from masgrid._private.envs.protocols.base import Protocol

SILO = ProtocolOptions.strict_rounds()


def proto(name: str, n: int = 3, options: ProtocolOptions | None = None) -> Protocol:
    return make_protocol(name, n, lambda agent, raw: int(raw), options)


def blocks(*commands: str) -> str:
    return "\n".join(f"```\n{c}\n```" for c in commands)


def replies(p: Protocol, agent: int, *commands: str) -> list[str]:
    return [o.reply for o in p.apply_reply(agent, blocks(*commands), None)]


@pytest.mark.parametrize("name", ["p2p", "broadcast", "kv"])
def test_default_wait_does_not_end_the_turn(name: str) -> None:
    p = proto(name)
    p.begin_round(1)
    out = replies(p, 0, "wait", "submit_result 7")
    assert out[0] == "acknowledged" and out[1].startswith("recorded 7")
    assert p.slots[0] == 7


@pytest.mark.parametrize("name", ["p2p", "broadcast", "kv"])
def test_silo_wait_skips_the_rest_of_the_reply(name: str) -> None:
    p = proto(name, options=SILO)
    p.begin_round(1)
    out = replies(p, 0, "wait", "submit_result 7", "wait")
    assert out[0] == "acknowledged"
    assert out[1].startswith("not executed: 2 command(s) after wait")
    assert len(out) == 2 and p.slots[0] is None


def test_silo_submit_ends_turn_and_has_no_side_effect() -> None:
    p = proto("broadcast", options=SILO)
    p.begin_round(1)
    out = replies(p, 0, "submit_result 5", "broadcast_message hi")
    assert out[0] == "recorded 5"  # no "broadcasted to" suffix
    assert out[1].startswith("not executed: 1 command(s) after submit_result")
    assert p.rows == []


def test_default_submit_notice_and_later_commands_run() -> None:
    p = proto("broadcast")
    p.begin_round(1)
    out = replies(p, 0, "submit_result 5", "broadcast_message hi")
    assert out[0].startswith("recorded 5 | broadcasted to")
    assert out[1].startswith("delivered")


@pytest.mark.parametrize("name,send", [("p2p", "send_message 1 hello"), ("broadcast", "broadcast_message hello")])
def test_default_messages_visible_in_the_same_round(name: str, send: str) -> None:
    p = proto(name)
    p.begin_round(1)
    replies(p, 0, send)
    assert "hello" in replies(p, 1, "receive_messages")[0]


@pytest.mark.parametrize("name,send", [("p2p", "send_message 1 hello"), ("broadcast", "broadcast_message hello")])
def test_silo_inbox_filled_at_next_round_start(name: str, send: str) -> None:
    p = proto(name, options=SILO)
    p.begin_round(1)
    assert replies(p, 0, send)[0].startswith("sent")  # reaches the inbox at the round boundary
    assert replies(p, 1, "receive_messages") == ["no new messages"]
    p.begin_round(2)
    out = p.apply_reply(1, blocks("receive_messages"), None)[0]
    assert "hello" in out.reply and out.extra["peers"] == [0]
    assert replies(p, 1, "receive_messages") == ["no new messages"]  # each message once


def test_silo_broadcast_skips_submitted_agents_default_does_not() -> None:
    for options, expected in ((SILO, [1]), (None, [1, 2])):
        p = proto("broadcast", options=options)
        p.begin_round(1)
        replies(p, 2, "submit_result 3")
        p.close_round()
        p.begin_round(2)
        out = p.apply_reply(0, blocks("broadcast_message x"), None)[0]
        p.close_round()
        assert out.extra["peers"] == expected and out.deliveries == len(expected)


def test_default_kv_writes_visible_immediately() -> None:
    p = proto("kv")
    p.begin_round(1)
    replies(p, 0, "write_file a\n1")
    assert replies(p, 1, "read_file a") == ["content=1"]


def test_silo_kv_sees_end_of_previous_round_plus_own_writes() -> None:
    p = proto("kv", options=SILO)
    p.begin_round(1)
    replies(p, 0, "write_file a\n1")
    assert replies(p, 0, "read_file a") == ["content=1"]  # the writer sees its own write
    assert replies(p, 1, "read_file a")[0].startswith("read_file -> error: no such file")
    assert replies(p, 1, "list_files") == ["no files"]
    p.begin_round(2)
    out = p.apply_reply(1, blocks("read_file a"), None)[0]
    assert out.reply == "content=1" and out.extra["read_other"] and out.extra["peers"] == [0]
    replies(p, 0, "write_file a\n2", "delete_file a")
    assert replies(p, 1, "read_file a") == ["content=1"]  # still the round-1 snapshot
    assert replies(p, 0, "read_file a")[0].startswith("read_file -> error")  # own delete applies
    p.begin_round(3)
    assert replies(p, 1, "read_file a")[0].startswith("read_file -> error: no such file")


def test_options_are_validated() -> None:
    with pytest.raises(ValueError):
        ProtocolOptions(wait_ends_turn="sometimes")  # type: ignore[arg-type]


def test_environment_uses_the_task_options() -> None:
    from masgrid._private.actors.environment import EnvironmentHost
    from masgrid._private.envs.tasks import get_task

    masbench = EnvironmentHost("p2p", get_task("sorting").generate(3, 2, 0, mode="random"))
    assert masbench.protocol.options == ProtocolOptions() and masbench.notice is None
    silo = EnvironmentHost("kv", get_task("silo/I-01").generate(3, 2, 0), condition="reminder")
    assert silo.protocol.options == SILO and silo.notice.startswith("Reminder: the commands available")
    out = silo.apply_round(1, [(0, blocks("wait"), None), (1, blocks("submit_result 1"), None)])
    assert out[0][-1].reply == silo.notice and all(r.reply != silo.notice for r in out[1])
