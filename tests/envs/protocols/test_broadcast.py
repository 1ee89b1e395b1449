from .conftest import run


def test_broadcast_fan_out_mark_read_and_order(make):
    p = make("broadcast", n=3)
    assert run(p, 0, "broadcast_message hello all") == ["delivered (Agent-1, Agent-2)"]
    assert run(p, 2, "broadcast_message second\nline two") == ["delivered (Agent-0, Agent-1)"]
    assert run(p, 1, "receive_messages") == ["broadcast from Agent-0: hello all\nbroadcast from Agent-2: second\nline two"]
    assert run(p, 1, "receive_messages") == ["no new messages"]
    assert run(p, 0, "receive_messages") == ["broadcast from Agent-2: second\nline two"]


def test_list_agents_and_submission_auto_broadcast(make):
    p = make("broadcast", n=3)
    (r,) = run(p, 1, "submit_result [7, 8]")
    assert r == "recorded [7, 8] | broadcasted to Agent-0, Agent-2"
    assert run(p, 0, "receive_messages") == ["broadcast from Agent-1: Agent-1 submitted result [7, 8]"]
    assert run(p, 0, "list_agents") == ["Agent-0: active (you), Agent-1: submitted, Agent-2: active"]


def test_empty_broadcast_is_a_typed_error(make):
    p = make("broadcast")
    assert run(p, 0, "broadcast_message") == ["broadcast_message -> error: empty message; usage: broadcast_message <text>"]


def test_accounting_flags(make):
    p = make("broadcast", n=4)
    (o,) = p.apply_reply(0, "```\nbroadcast_message x\n```", None)
    assert o.communication and o.messages_sent == 1 and o.deliveries == 3
    (o,) = p.apply_reply(0, "```\nwait\n```", None)
    assert not o.communication
