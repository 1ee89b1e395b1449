"""Merge stages against `git merge-file`, the command the paper names (section 2.2), on random edits."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from masgrid.families.cooper.merge import CONTEXT_LINES, make_branches, merge_branches, resolve_text

_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin"}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env=_ENV).stdout


def _edit(lines: list[str], rng: random.Random, tag: str) -> list[str]:
    """Replace or insert one or two random blocks."""
    out = list(lines)
    for _ in range(rng.randint(1, 2)):
        at = rng.randint(0, len(out))
        cut = rng.randint(0, 3) if at < len(out) else 0
        out[at:at + cut] = [f"{tag} {rng.randint(0, 999)}" for _ in range(rng.randint(1, 3))]
    return out


def _merge_file(a: Path, base: Path, b: Path, *extra: str) -> tuple[int, str]:
    done = subprocess.run(["git", "merge-file", "-p", *extra, "-L", "patch_1", "-L", "repo_state", "-L", "patch_2",
                           str(a), str(base), str(b)], capture_output=True, text=True, env=_ENV)
    return done.returncode, done.stdout


def test_naive_and_union_match_git_merge_file_on_random_edits(tmp_path):
    rng = random.Random(2016)
    seen_conflicts = seen_clean = 0
    for case in range(10):
        repo = tmp_path / f"r{case}"
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=_ENV)
        base_lines = [f"line {i}" for i in range(rng.randint(8, 25))]
        texts = {"base": base_lines, "a": _edit(base_lines, rng, "alpha"), "b": _edit(base_lines, rng, "beta")}
        files = {}
        for name, lines in texts.items():
            files[name] = tmp_path / f"{case}-{name}.txt"
            files[name].write_text("\n".join(lines) + "\n")
        (repo / "f.txt").write_text(files["base"].read_text())
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "base")
        base = _git(repo, "rev-parse", "HEAD").strip()
        patches = {}
        for fid, name in ((1, "a"), (2, "b")):
            (repo / "f.txt").write_text(files[name].read_text())
            patches[fid] = _git(repo, "diff")
            _git(repo, "checkout", "-q", "--", "f.txt")
        branches = make_branches(repo, base, patches)
        assert branches.apply_status == {1: "applied", 2: "applied"}
        naive = merge_branches(repo, branches)
        expected_conflicts, naive_text = _merge_file(files["a"], files["base"], files["b"])
        assert naive.conflicts == expected_conflicts, case
        union = merge_branches(repo, branches, union=True)
        _, union_text = _merge_file(files["a"], files["base"], files["b"], "--union")
        assert union.commit is not None and union.conflicts == 0
        assert _git(repo, "show", f"{union.commit}:f.txt") == union_text, case
        if expected_conflicts == 0:
            assert _git(repo, "show", f"{naive.commit}:f.txt") == naive_text
            seen_clean += 1
        else:
            assert naive.commit is None and naive.unmerged == ["f.txt"]
            seen_conflicts += 1
        # the task's clone is untouched: still one commit on the default branch, clean tree
        assert _git(repo, "status", "--porcelain") == ""
    assert seen_conflicts >= 3 and seen_clean >= 2  # both paths were exercised


def test_resolver_sees_each_region_with_context_and_replaces_it():
    """Two regions with random gaps: each excerpt holds up to CONTEXT_LINES lines either side,
    never a line of the other region; the lines between them are shared out (the lower region
    takes half, rounded down, when fewer than 2*CONTEXT_LINES separate them)."""
    rng = random.Random(5)
    c = CONTEXT_LINES
    for _ in range(200):
        pre = [f"p{i}" for i in range(rng.randint(0, 9))]
        mid = [f"m{i}" for i in range(rng.randint(0, 12))]
        post = [f"q{i}" for i in range(rng.randint(0, 9))]
        block = ["<<<<<<< ours", "x = 1", "=======", "x = 2", ">>>>>>> theirs"]
        text = "\n".join(pre + block + mid + block + post) + "\n"
        seen: list[str] = []

        def resolver(snippet: str) -> str:
            seen.append(snippet)
            return f"RESOLVED{len(seen)}\n"

        out = resolve_text(text, resolver)
        lower_takes = c if len(mid) >= 2 * c else len(mid) // 2
        upper_takes = min(c, len(mid) - lower_takes)
        lower_before = mid[len(mid) - lower_takes:]
        upper_after = mid[:upper_takes]
        assert seen[0] == "\n".join(lower_before + block + post[:c]) + "\n"  # bottom region first
        assert seen[1] == "\n".join(pre[max(0, len(pre) - c):] + block + upper_after) + "\n"
        untouched_pre = pre[:max(0, len(pre) - c)]
        untouched_mid = mid[upper_takes:len(mid) - lower_takes]
        expect = untouched_pre + ["RESOLVED2"] + untouched_mid + ["RESOLVED1"] + post[c:]
        assert out == "\n".join(expect) + "\n"
