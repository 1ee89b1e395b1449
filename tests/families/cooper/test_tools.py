"""The agent's tools: edits checked against list/str operations written here, escapes refused."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest

from masgrid.families.cooper.sandbox import Sandbox, SandboxSettings, sandbox_problem
from masgrid.families.cooper.tools import TOOL_SPECS, ToolBox, ToolLimits, parse_arguments

needs_bwrap = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


@pytest.fixture()
def wt(tmp_path: Path) -> Path:
    root = tmp_path / "agent0"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "pkg" / "mod.py").write_text("a = 1\nb = 2\nc = 3\n")
    return root


def toolbox(root: Path, kind: str = "none", **limits: object) -> ToolBox:
    return ToolBox(root, Sandbox(SandboxSettings(kind=kind, timeout_s=20), writable=[root]), ToolLimits(**limits))


def parse_numbered(text: str) -> list[tuple[int, str]]:
    rows = []
    for line in text.split("\n"):
        num, _, content = line.partition("\t")
        rows.append((int(num), content))
    return rows


def test_specs_are_openai_function_tools() -> None:
    names = [s["function"]["name"] for s in TOOL_SPECS]
    assert names == ["view", "create_file", "str_replace", "insert", "bash", "send_message", "finish"]
    required = {"view": ["path"], "create_file": ["path", "content"], "str_replace": ["path", "old_str", "new_str"],
                "insert": ["path", "insert_line", "text"], "bash": ["command"], "send_message": ["to", "content"],
                "finish": ["status", "summary"]}
    for spec in TOOL_SPECS:
        fn = spec["function"]
        assert spec["type"] == "function" and fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert sorted(params["required"]) == sorted(required[fn["name"]])
        assert all(p.get("description") and "type" in p for p in params["properties"].values())
        assert "title" not in json.dumps(spec)
    assert next(s for s in TOOL_SPECS if s["function"]["name"] == "finish")["function"]["parameters"][
        "properties"]["status"]["enum"] == ["done", "partial", "blocked"]


def test_view_numbers_lines_and_ranges_on_random_files(wt: Path) -> None:
    rng = random.Random(7)
    tb = toolbox(wt, view_max_lines=50)
    for case in range(60):
        lines = [" ".join(rng.choice(["x", "def", "\tif", "  ", "#", "é"]) for _ in range(rng.randint(0, 4)))
                 for _ in range(rng.randint(1, 120))]
        content = "\n".join(lines) + ("\n" if case % 2 else "")
        (wt / "f.txt").write_text(content)
        # a file's lines: a final newline ends the last line rather than starting an empty one
        lines = content[:-1].split("\n") if content.endswith("\n") else content.split("\n")
        first = rng.randint(1, len(lines))
        last = rng.choice([-1, rng.randint(first, len(lines))])
        res = tb.call("view", {"path": "f.txt", "view_range": [first, last]})
        stop = len(lines) if last == -1 else last
        want = list(enumerate(lines, start=1))[first - 1:min(stop, first + 49)]
        body = res.text.split("\n[shown")[0]
        assert res.ok and parse_numbered(body) == want
        assert ("[shown" in res.text) == (stop - first + 1 > 50)
        whole = tb.call("view", {"path": str(wt / "f.txt")})  # absolute paths inside the root work
        assert parse_numbered(whole.text.split("\n[f.txt has")[0]) == list(enumerate(lines, start=1))[:50]
    assert not tb.call("view", {"path": "f.txt", "view_range": [0, 3]}).ok
    assert not tb.call("view", {"path": "f.txt", "view_range": [5, 2]}).ok


def test_view_lists_two_levels_without_git(wt: Path) -> None:
    (wt / "pkg" / "sub" / "deep").mkdir(parents=True)
    (wt / "pkg" / "sub" / "deep" / "hidden_by_depth.py").write_text("")
    (wt / "README").write_text("r")
    res = toolbox(wt).call("view", {"path": "."})
    assert res.ok
    assert res.text.splitlines()[1:] == ["README", "pkg/", "pkg/mod.py", "pkg/sub/"]


def _overlapping_count(text: str, sub: str) -> int:
    return len(re.findall(f"(?={re.escape(sub)})", text))


def test_str_replace_on_random_texts_matches_a_single_replace(wt: Path) -> None:
    rng = random.Random(11)
    tb = toolbox(wt)
    path = wt / "pkg" / "mod.py"
    for _ in range(150):
        text = "".join(rng.choice(["a", "b", "\n", "ab", "é"]) for _ in range(rng.randint(1, 40)))
        path.write_text(text)
        lo = rng.randrange(len(text))
        old = text[lo:lo + rng.randint(1, 4)]
        new = "".join(rng.choice(["Z", "\n", ""]) for _ in range(rng.randint(0, 3)))
        res = tb.call("str_replace", {"path": "pkg/mod.py", "old_str": old, "new_str": new})
        count = _overlapping_count(text, old)
        if count == 1:
            at = text.index(old)
            assert res.ok and path.read_text() == text[:at] + new + text[at + len(old):]
            assert res.changed_paths == ["pkg/mod.py"]
            first = text[:at].count("\n") + 1
            assert f"replaced lines {first}-" in res.text
        else:
            assert not res.ok and path.read_text() == text
            assert f"occurs {count} times" in res.text and "\n" not in res.text


def test_insert_on_random_files_matches_list_insertion(wt: Path) -> None:
    rng = random.Random(5)
    tb = toolbox(wt)
    path = wt / "pkg" / "mod.py"
    for _ in range(200):
        lines = [f"line{i}" for i in range(rng.randint(0, 12))]
        ends_nl = rng.random() < 0.7
        path.write_text("\n".join(lines) + ("\n" if ends_nl and lines else ""))
        at = rng.randint(-1, len(lines) + 1)
        block = [f"new{j}" for j in range(rng.randint(1, 3))]
        text = "\n".join(block) + ("\n" if rng.random() < 0.5 else "")
        res = tb.call("insert", {"path": "pkg/mod.py", "insert_line": at, "text": text})
        if 0 <= at <= len(lines):
            assert res.ok, res.text
            assert path.read_text().splitlines() == lines[:at] + block + lines[at:]
            assert f"inserted lines {at + 1}-{at + len(block)}" in res.text
        else:
            assert not res.ok and "out of range" in res.text


def test_create_file_makes_folders_and_never_overwrites(wt: Path) -> None:
    tb = toolbox(wt)
    res = tb.call("create_file", {"path": "pkg/new/thing.py", "content": "x = 1\ny = 2\n"})
    assert res.ok and res.changed_paths == ["pkg/new/thing.py"] and "2 lines" in res.text
    assert (wt / "pkg" / "new" / "thing.py").read_text() == "x = 1\ny = 2\n"
    again = tb.call("create_file", {"path": "pkg/mod.py", "content": "gone"})
    assert not again.ok and "already exists" in again.text
    assert (wt / "pkg" / "mod.py").read_text() == "a = 1\nb = 2\nc = 3\n"


def test_escapes_are_refused_with_one_line(wt: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (wt / "link_file").symlink_to(outside / "secret.txt")
    (wt / "link_dir").symlink_to(outside)
    (wt / "pkg" / "inner").symlink_to(wt / "pkg" / "mod.py")  # a link inside the root is fine
    (wt / "loop_a").symlink_to(wt / "loop_b")
    (wt / "loop_b").symlink_to(wt / "loop_a")
    tb = toolbox(wt)
    calls = [
        ("view", {"path": "../outside/secret.txt"}, "outside the repository"),
        ("view", {"path": str(outside / "secret.txt")}, "outside the repository"),
        ("view", {"path": "link_file"}, "symbolic link"),
        ("view", {"path": "link_dir/secret.txt"}, "symbolic link"),
        ("str_replace", {"path": "link_file", "old_str": "secret", "new_str": "x"}, "symbolic link"),
        ("insert", {"path": "link_dir/secret.txt", "insert_line": 0, "text": "x"}, "symbolic link"),
        ("create_file", {"path": "link_dir/planted.txt", "content": "x"}, "symbolic link"),
        ("create_file", {"path": "../planted.txt", "content": "x"}, "outside the repository"),
        ("view", {"path": ".git/config"}, "inside .git"),
        ("create_file", {"path": "pkg/../.git/hooks/post-merge", "content": "x"}, "inside .git"),
        ("view", {"path": ""}, "empty"),
        ("view", {"path": "loop_a"}, "cannot be resolved"),
    ]
    for name, args, why in calls:
        res = tb.call(name, args)
        assert not res.ok and why in res.text and "\n" not in res.text, (name, args, res.text)
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"] and not (tmp_path / "planted.txt").exists()
    assert not (wt / ".git" / "hooks").exists()
    assert tb.call("view", {"path": "pkg/inner"}).ok


def test_binary_huge_and_special_files_are_refused(wt: Path) -> None:
    (wt / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    (wt / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (wt / "big.txt").write_text("x" * 5_000)
    os.mkfifo(wt / "pipe")
    tb = toolbox(wt, max_file_bytes=4_000)
    for path, why in [("blob.bin", "binary"), ("latin.txt", "not UTF-8"), ("big.txt", "5000 bytes"),
                      ("pipe", "not a regular file"), ("nope.py", "does not exist")]:
        res = tb.call("view", {"path": path})
        assert not res.ok and why in res.text and "\n" not in res.text, res.text
    too_long = toolbox(wt, max_write_bytes=100).call("create_file", {"path": "long.txt", "content": "y" * 101})
    assert not too_long.ok and "100 bytes" in too_long.text and not (wt / "long.txt").exists()
    (wt / "near.txt").write_text("z" * 3_990 + "\nend\n")
    grow = tb.call("str_replace", {"path": "near.txt", "old_str": "end", "new_str": "e" * 50})
    assert not grow.ok and "past the 4000" in grow.text and (wt / "near.txt").read_text().endswith("\nend\n")


def test_bad_arguments_and_scheduler_tools_are_errors(wt: Path) -> None:
    tb = toolbox(wt)
    cases = [
        ("view", {}, "path"),
        ("view", {"path": "pkg", "bogus": 1}, "bogus"),
        ("view", {"path": "pkg/mod.py", "view_range": [1, 2, 3]}, "view_range"),
        ("insert", {"path": "pkg/mod.py", "insert_line": "two", "text": "x"}, "insert_line"),
        ("bash", {"command": 5}, "command"),
        ("teleport", {}, "unknown tool"),
        ("send_message", {"to": "agent1", "content": "hi"}, "scheduler"),
        ("finish", {"status": "done", "summary": ""}, "scheduler"),
        ("str_replace", {"path": "pkg/mod.py", "old_str": "", "new_str": "x"}, "empty"),
    ]
    for name, args, why in cases:
        res = tb.call(name, args)
        assert not res.ok and why in res.text and "\n" not in res.text and res.tool == name, res.text
    assert parse_arguments("view", ["pkg"]) == "arguments for view must be a JSON object, got list"
    assert not isinstance(parse_arguments("finish", {"status": "done", "summary": "s"}), str)
    assert isinstance(parse_arguments("finish", {"status": "maybe", "summary": "s"}), str)


@needs_bwrap
def test_bash_runs_sandboxed_with_limits(wt: Path, tmp_path: Path) -> None:
    tb = toolbox(wt, kind="bwrap", bash_output_chars=1_000, bash_timeout_s=1)
    res = tb.call("bash", {"command": f"pwd; touch {tmp_path}/escaped; echo err >&2; exit 3"})
    assert res.ok and res.text.startswith("exit code 3\n") and str(wt) in res.text and "[stderr]\nerr" in res.text
    assert not (tmp_path / "escaped").exists()
    assert res.notes == ([] if "not enforced" not in tb.sandbox.enforcement["processes"] else ["process limit not enforced"])
    long = tb.call("bash", {"command": "seq 1 100000"})
    assert long.ok and len(long.text) < 1_200 and long.text.rstrip().endswith("100000") and "omitted" in long.text
    slow = tb.call("bash", {"command": "sleep 10", "timeout_s": 30})  # asks for more than allowed
    assert not slow.ok and slow.text.splitlines()[0] == "command stopped: it ran past its 1 s time limit"
    flood = ToolBox(wt, Sandbox(SandboxSettings(output_kill_bytes=1 << 20), writable=[wt])).call(
        "bash", {"command": "yes"})
    assert not flood.ok and flood.text.startswith("command stopped: it wrote") and len(flood.text) < 25_000
