from .conftest import run


def test_write_read_overwrite_list_delete(make):
    p = make("kv", n=2)
    p.round = 1
    (r,) = run(p, 0, "write_file plan/a\nline one\nline two")
    assert r == "wrote plan/a (17 chars) preview=line one\\nline two"
    run(p, 1, "write_file plan/b\nB")
    run(p, 1, "write_file other\nz")
    assert run(p, 1, "read_file plan/a") == ["content=line one\nline two"]
    p.round = 2
    run(p, 1, "write_file plan/a\nreplaced")  # last writer wins, keeps its id
    assert run(p, 0, "read_file plan/a") == ["content=replaced"]
    assert run(p, 0, "list_files plan/") == ["id=1 path=plan/a len=8 updated=2\nid=2 path=plan/b len=1 updated=1"]
    assert run(p, 0, "list_files")[0].count("\n") == 2
    assert run(p, 0, "delete_file plan/b") == ["removed plan/b"]
    assert run(p, 0, "read_file plan/b") == ["read_file -> error: no such file: plan/b"]
    assert run(p, 0, "delete_file plan/b") == ["delete_file -> error: no such file: plan/b"]
    assert run(p, 0, "list_files zzz") == ["no files with prefix 'zzz'"]


def test_long_values_are_previewed_at_120_chars(make):
    p = make("kv")
    (r,) = run(p, 0, "write_file big\n" + "x" * 500)
    assert r == "wrote big (500 chars) preview=" + "x" * 120


def test_submission_writes_marker_file(make):
    p = make("kv", n=2)
    assert run(p, 1, "submit_result [3, 1]") == ["recorded [3, 1] | wrote_file=Agent-1_submission.txt"]
    assert run(p, 0, "read_file Agent-1_submission.txt") == ["content=Agent-1 is offline and submitted [3, 1]"]


def test_reads_of_other_agents_files_are_flagged(make):
    p = make("kv", n=2)
    run(p, 0, "write_file mine\n1")
    (own,) = p.apply_reply(0, "```\nread_file mine\n```", None)
    (other,) = p.apply_reply(1, "```\nread_file mine\n```", None)
    assert own.extra["read_other"] is False and other.extra["read_other"] is True


def test_write_needs_a_key(make):
    p = make("kv")
    assert run(p, 0, "write_file")[0].startswith("write_file -> error: usage: write_file <key>")
