from .conftest import run


def test_directed_delivery_in_insertion_order(make):
    p = make("p2p", n=3)
    assert run(p, 0, "send_message 2 first") == ["delivered to Agent-2"]
    assert run(p, 1, "send_message Agent-2 from one\nwith two lines") == ["delivered to Agent-2"]
    assert run(p, 0, "send_message 2 third") == ["delivered to Agent-2"]
    assert run(p, 1, "receive_messages") == ["no new messages"]
    assert run(p, 2, "receive_messages") == ["from Agent-0: first\nfrom Agent-1: from one\nwith two lines\nfrom Agent-0: third"]
    assert run(p, 2, "receive_messages") == ["no new messages"]


def test_offline_refusal_after_receiver_submitted(make):
    p = make("p2p", n=3)
    assert run(p, 1, "submit_result [1, 2]") == ["recorded [1, 2]"]  # no side effect in P2P
    assert run(p, 0, "send_message 1 are you there") == ["Agent-1 is offline (already submitted); message not delivered"]
    assert p.rows == []


def test_invalid_targets_are_typed_errors(make):
    p = make("p2p", n=3)
    assert run(p, 0, "send_message 9 hi") == ["send_message -> error: no such agent: Agent-9 (agents are 0..2)"]
    assert run(p, 0, "send_message bob hi")[0].startswith("send_message -> error: invalid agent id 'bob'")
    assert run(p, 0, "send_message 0 me") == ["send_message -> error: cannot send a message to yourself"]
    assert run(p, 0, "send_message 1") == ["send_message -> error: empty message; usage: send_message <to_id> <text>"]
    assert run(p, 0, "send_message") == ["send_message -> error: usage: send_message <to_id> <text>"]


def test_p2p_has_no_broadcast_or_listing(make):
    p = make("p2p")
    assert run(p, 0, "list_agents") == ["Unknown command: list_agents"]
