"""The scripted agent's patch reading, checked against git itself on random edits: applying
the parsed hunks as exact-string replacements (what the policy's str_replace calls do)
must give the file git's diff describes, and the announced line ranges must cover every
changed line of the new file."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from masgrid._private.envs.tasks.base import AgentView
from masgrid.families.cooper.policy import GoldPatchPolicy, line_ranges, parse_patch


def git_diff(tmp: Path, old: str, new: str, name: str = "pkg/mod.py") -> str:
    """A git-format patch a/<name> -> b/<name>, made by git from two real files."""
    a, b = tmp / "a" / name, tmp / "b" / name
    for path, text in ((a, old), (b, new)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # no prefixes, run from tmp: the paths read a/<name> and b/<name>, as in a repository's diff
    return subprocess.run(["git", "diff", "--no-index", "--no-color", "--src-prefix=", "--dst-prefix=",
                           f"a/{name}", f"b/{name}"], capture_output=True, text=True, cwd=tmp).stdout


def random_edit(rng: random.Random, lines: list[str]) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(len(out) + 1)
        op = rng.choice(("insert", "delete", "replace"))
        if op == "insert" or not out:
            out[k:k] = [f"    new_{rng.randrange(10**6)} = {rng.randrange(100)}" for _ in range(rng.randint(1, 3))]
        elif op == "delete" and k < len(out):
            del out[k:k + rng.randint(1, 2)]
        elif k < len(out):
            out[k] = f"    changed_{rng.randrange(10**6)}()"
    return out


@pytest.mark.parametrize("seed", range(40))
def test_hunks_as_exact_replacements_rebuild_gits_result(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    # distinct lines: every hunk's old text is unique, as str_replace requires
    old_lines = [f"line_{i} = {rng.randrange(10**9)}" for i in range(rng.randint(5, 60))]
    new_lines = random_edit(rng, old_lines)
    old, new = "\n".join(old_lines) + "\n", "\n".join(new_lines) + "\n"
    patch = git_diff(tmp_path, old, new)
    files = parse_patch(patch)
    if old == new:
        assert files == []
        return
    (f,) = files
    assert f.path == "pkg/mod.py" and f.status == "modified"
    text = old
    for h in f.hunks:
        assert text.count(h.old_text) == 1
        text = text.replace(h.old_text, h.new_text, 1)
    assert text == new
    # every line that differs in the new file lies in an announced range
    covered = set()
    for h in f.hunks:
        covered.update(range(h.new_start, h.new_start + max(h.new_count, 1)))
    import difflib

    for tag, _, _, j1, j2 in difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            assert set(range(j1 + 1, j2 + 1)) <= covered
    assert line_ranges(files).startswith("pkg/mod.py lines ")


def test_new_and_deleted_files(tmp_path: Path) -> None:
    patch = git_diff(tmp_path, "", "def f():\n    return 1\n", name="pkg/new.py")
    # git shows an empty old file as modified from nothing: build the added-file form by hand
    added = ("diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/new.py\n"
             "@@ -0,0 +1,2 @@\n+def f():\n+    return 1\n")
    deleted = ("diff --git a/pkg/old.py b/pkg/old.py\ndeleted file mode 100644\n--- a/pkg/old.py\n+++ /dev/null\n"
               "@@ -1 +0,0 @@\n-x = 1\n")
    files = parse_patch(added + deleted)
    assert [(f.path, f.status) for f in files] == [("pkg/new.py", "added"), ("pkg/old.py", "deleted")]
    assert files[0].hunks[0].new_text == "def f():\n    return 1\n"
    assert line_ranges(files) == "pkg/new.py (new file); pkg/old.py (deleted)"
    assert parse_patch(patch)[0].hunks[0].new_text == "def f():\n    return 1\n"


def view(phase: int, setting: str = "coop", n: int = 2) -> AgentView:
    return AgentView(agent=0, n_agents=n, task="cooper/x_task/1", params={"setting": setting}, local_input=[],
                     phase=phase)


PATCH = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,4 @@\n a = 1\n b = 2\n+c = 3\n d = 4\n")
PARTNER = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -5,4 +5,4 @@\n e = 5\n f = 6\n g = 7\n"
           "-h = 8\n+h = 80\n")


def script(policy: GoldPatchPolicy) -> list[tuple[str, dict]]:
    out = []
    while (call := policy.next_call([])) is not None:
        out.append((call["name"], call["arguments"]))
    return out


def test_scripts_per_phase_and_setting() -> None:
    plan = script(GoldPatchPolicy(view(1), "workspace", 0, [PATCH], [PARTNER]))
    assert [name for name, _ in plan] == ["send_message", "finish"]
    assert "m.py lines 1-4" in plan[1][1]["summary"]
    execute = script(GoldPatchPolicy(view(2), "workspace", 0, [PATCH], [PARTNER]))
    assert [name for name, _ in execute] == ["view", "str_replace", "send_message", "finish"]
    assert execute[1][1] == {"path": "m.py", "old_str": "a = 1\nb = 2\nd = 4\n", "new_str": "a = 1\nb = 2\nc = 3\nd = 4\n"}
    nocomm = script(GoldPatchPolicy(view(2, "nocomm"), "workspace", 0, [PATCH], [PARTNER]))
    assert [name for name, _ in nocomm] == ["view", "str_replace", "finish"]
    solo_plan = script(GoldPatchPolicy(view(1, "solo", 1), "workspace", 0, [PATCH, PARTNER], []))
    assert [name for name, _ in solo_plan] == ["finish"]


def test_conflicting_variant_edits_the_partners_spot() -> None:
    calls = script(GoldPatchPolicy(view(2), "workspace", 0, [PATCH], [PARTNER], conflicting=True))
    intrusion = calls[2]
    assert intrusion[0] == "str_replace"
    assert intrusion[1]["old_str"] == "e = 5\nf = 6\ng = 7\n"
    assert intrusion[1]["new_str"].startswith("e = 5\nf = 6\ng = 7\n# scripted agent")


BASE_M = "a = 1\nb = 2\nd = 4\nx = 0\ne = 5\nf = 6\ng = 7\nh = 8\n"  # the base PATCH and PARTNER fit


def test_solo_combines_two_patches_of_one_file() -> None:
    calls = script(GoldPatchPolicy(view(2, "solo", 1), "workspace", 0, [PATCH, PARTNER], [], features=[4, 7],
                                   read_base=lambda path: BASE_M))
    assert [name for name, _ in calls] == ["view", "str_replace", "str_replace", "finish"]
    text = BASE_M
    for _, args in calls[1:3]:
        assert text.count(args["old_str"]) == 1
        text = text.replace(args["old_str"], args["new_str"])
    assert text == "a = 1\nb = 2\nc = 3\nd = 4\nx = 0\ne = 5\nf = 6\ng = 7\nh = 80\n"
    assert calls[-1][1]["status"] == "done" and "Not combined" not in calls[-1][1]["summary"]


def test_solo_reports_what_it_could_not_combine() -> None:
    clash = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -7,2 +7,2 @@\n g = 7\n-h = 8\n+h = 88\n"
    calls = script(GoldPatchPolicy(view(2, "solo", 1), "workspace", 0, [PARTNER, clash], [], features=[2, 5],
                                   read_base=lambda path: BASE_M))
    text = BASE_M
    for name, args in calls:
        if name == "str_replace":
            text = text.replace(args["old_str"], args["new_str"])
    # both versions of the overlapping line 8, feature 2's first
    assert text == "a = 1\nb = 2\nd = 4\nx = 0\ne = 5\nf = 6\ng = 7\nh = 80\nh = 88\n"
    finish = calls[-1][1]
    assert finish["status"] == "partial" and "m.py, features 2, 5: base line 8" in finish["summary"]
    added = ("diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x = {}\n")
    deleted = "diff --git a/m.py b/m.py\ndeleted file mode 100644\n--- a/m.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a = 1\n"
    calls = script(GoldPatchPolicy(view(2, "solo", 1), "workspace", 0,
                                   [added.format(1) + deleted, added.format(2) + PATCH], [], features=[1, 2],
                                   read_base=lambda path: BASE_M))
    names = [name for name, _ in calls]
    assert names == ["view", "create_file", "str_replace", "finish"]  # m.py kept and modified, never removed
    assert calls[1][1] == {"path": "n.py", "content": "x = 1\nx = 2\n"}
    finish = calls[-1][1]
    assert finish["status"] == "partial"
    assert "feature(s) 1 delete m.py" in finish["summary"] and "features 1, 2 each create n.py" in finish["summary"]


def test_solo_writes_an_empty_base_file_whole(tmp_path: Path) -> None:
    one = "diff --git a/e.py b/e.py\n--- a/e.py\n+++ b/e.py\n@@ -0,0 +1 @@\n+x = 'it''s'\n"
    two = "diff --git a/e.py b/e.py\n--- a/e.py\n+++ b/e.py\n@@ -0,0 +1 @@\n+y = 2\n"
    calls = script(GoldPatchPolicy(view(2, "solo", 1), "workspace", 0, [one, two], [], read_base=lambda path: ""))
    assert [name for name, _ in calls] == ["view", "bash", "finish"]
    (tmp_path / "e.py").write_text("")
    subprocess.run(["bash", "-c", calls[1][1]["command"]], cwd=tmp_path, check=True)
    assert (tmp_path / "e.py").read_text() == "x = 'it''s'\ny = 2\n"
