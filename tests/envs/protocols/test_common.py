import pytest

from masgrid._private.envs.harness import MSG_MODEL_ERROR, MSG_NO_COMMANDS

from .conftest import run


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_harness_replies(make, name):
    p = make(name)
    assert [o.reply for o in p.apply_reply(0, None, "http 500")] == [MSG_MODEL_ERROR]
    assert [o.reply for o in p.apply_reply(0, "no fences here", None)] == [MSG_NO_COMMANDS]
    assert [o.reply for o in p.apply_reply(0, "", None)] == [MSG_NO_COMMANDS]
    assert run(p, 0, "fly_away now") == ["Unknown command: fly_away"]
    assert run(p, 0, "wait") == ["acknowledged"]


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_typed_submit_errors_leave_slot_empty(make, name):
    p = make(name, n=3, k=2)
    (r,) = run(p, 1, "submit_result [1, 2, 3]")
    assert r == "submit_result -> error: expected exactly 2 integers, got 3"
    (r,) = run(p, 1, "submit_result [1, x]")
    assert r == "submit_result -> error: expected integers only, got 'x'"
    (r,) = run(p, 1, "submit_result [1.5, 2]")
    assert r.startswith("submit_result -> error: expected integers only")
    (r,) = run(p, 1, "submit_result")
    assert r.startswith("submit_result -> error: missing answer")
    assert p.slots == [None, None, None]
    (r,) = run(p, 1, "submit_result [4, 9]")
    assert r.startswith("recorded [4, 9]")
    assert p.slots == [None, [4, 9], None]


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_other_protocols_verbs_are_unknown(make, name):
    foreign = {"broadcast": "read_file x", "p2p": "broadcast_message hi", "kv": "send_message 1 hi"}[name]
    assert run(make(name), 0, foreign) == [f"Unknown command: {foreign.split()[0]}"]


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_all_blocks_of_a_reply_run_in_order(make, name):
    p = make(name)
    replies = run(p, 0, "wait", "nonsense", "submit_result 3 4")
    assert replies[0] == "acknowledged"
    assert replies[1] == "Unknown command: nonsense"
    assert replies[2].startswith("recorded [3, 4]")


@pytest.mark.parametrize("name", ["broadcast", "p2p", "kv"])
def test_reset_clears_everything(make, name):
    p = make(name)
    run(p, 0, "submit_result [1, 2]")
    p.reset()
    assert p.slots == [None, None, None]
    assert run(p, 1, {"broadcast": "receive_messages", "p2p": "receive_messages", "kv": "list_files"}[name]) in (
        ["no new messages"], ["no files"])
