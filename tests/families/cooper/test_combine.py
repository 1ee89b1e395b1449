"""Combining several gold patches of one file (the scripted solo agent), checked against
edits built by construction and against git itself on many random cases:

- two features whose edits sit on disjoint base lines (adjacent ones included) combine to
  the file with both sets of edits applied, built here directly from the edit lists;
- where git's own three-way merge (`git merge-file`) is clean, the combination is git's;
- edits that change the same base lines are reported as an overlap (and git conflicts too);
- the exact-string replacements reach the combined text, each unique where it is applied,
  also in files full of repeated lines.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from masgrid.families.cooper.combine import blocks_of, combine, replacements
from masgrid.families.cooper.policy import parse_patch
from tests.families.cooper.test_policy import git_diff

Edit = tuple[int, int, list[str]]  # base lines [start, end) -> new lines


def apply(base: list[str], edits: list[Edit]) -> list[str]:
    """Edits on disjoint base spans, applied bottom-up (insertions at one point: list order)."""
    out = list(base)
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out[start:end] = new
    return out


def random_edits(rng: random.Random, n: int, tag: str, taken: set[int], gap: int) -> list[Edit]:
    """A few replacements, deletions and insertions on base lines not in `taken` (nor within
    `gap` lines of them), distinct new lines tagged with the feature."""
    edits: list[Edit] = []
    for _ in range(rng.randint(1, 3)):
        start = rng.randrange(n + 1)
        length = 0 if rng.random() < 0.35 else rng.randint(1, 3)
        end = min(n, start + length)
        span = set(range(start - gap, end + gap)) if end > start else set(range(start - gap, start + gap + 1))
        if span & taken:
            continue
        taken |= set(range(start, end)) | ({start} if end == start else set())
        new = [] if end > start and rng.random() < 0.3 else [
            f"{tag}_{rng.randrange(10**9)}\n" for _ in range(rng.randint(1, 3))]
        if end == start and not new:
            continue
        edits.append((start, end, new))
    # one feature's edits must not touch each other either (git would show them as one block)
    edits.sort()
    kept: list[Edit] = []
    for e in edits:
        if kept and e[0] <= kept[-1][1]:
            continue
        kept.append(e)
    return kept


def text_of(lines: list[str]) -> str:
    return "".join(lines)


def blocks_from_git(tmp: Path, base: str, new: str, feature: int, name: str) -> list:
    (f,) = parse_patch(git_diff(tmp / name, base, new))
    return blocks_of(feature, [h.lines for h in f.hunks], [h.old_start for h in f.hunks])


def run_replacements(base: str, pairs: list[tuple[str, str]]) -> str:
    """What the str_replace tool does with each pair: the old text must occur exactly once."""
    text = base
    for old, new in pairs:
        assert old, "an empty old_str cannot be replaced"
        occurrences = sum(1 for k in range(len(text)) if text.startswith(old, k))
        assert occurrences == 1, (old, occurrences)
        text = text.replace(old, new, 1)
    return text


def merge_file(tmp: Path, base: str, ours: str, theirs: str) -> tuple[int, str]:
    """git merge-file -p: (conflicts, merged text)."""
    paths = []
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        path = tmp / f"{name}.txt"
        path.write_text(text)
        paths.append(str(path))
    done = subprocess.run(["git", "merge-file", "-p", *paths], capture_output=True, text=True)
    assert done.returncode >= 0
    return done.returncode, done.stdout


@pytest.mark.parametrize("seed", range(60))
def test_disjoint_edits_combine_to_both(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(4, 30)
    base_lines = [f"base_{i}_{rng.randrange(10**9)}\n" for i in range(n)]
    gap = seed % 2  # 0: edits may be adjacent; 1: an unchanged line between them
    a: list[Edit] = []
    b: list[Edit] = []
    while not (a and b):  # redraw until both features have edits
        taken: set[int] = set()
        a, b = random_edits(rng, n, "a", taken, gap), random_edits(rng, n, "b", taken, gap)
    base, one, two = text_of(base_lines), text_of(apply(base_lines, a)), text_of(apply(base_lines, b))
    # both insert at one point is never drawn (taken holds insertion points): every edit's span is its own
    expected = text_of(apply(base_lines, a + b))
    blocks = blocks_from_git(tmp_path, base, one, 1, "a") + blocks_from_git(tmp_path, base, two, 2, "b")
    edits, merged = combine(base, blocks)
    assert merged.overlaps == []
    assert merged.text == expected
    assert run_replacements(base, replacements(base, edits)) == expected
    conflicts, by_git = merge_file(tmp_path, base, one, two)
    if conflicts == 0:
        assert by_git == expected
    else:
        assert gap == 0  # git calls only adjacent changes a conflict here


@pytest.mark.parametrize("seed", range(30))
def test_same_lines_changed_by_both_is_an_overlap(tmp_path: Path, seed: int) -> None:
    rng = random.Random(1000 + seed)
    n = rng.randint(5, 25)
    base_lines = [f"base_{i}_{rng.randrange(10**9)}\n" for i in range(n)]
    start = rng.randrange(n - 1)
    a_end = rng.randint(start + 1, n)
    b_start = rng.randint(max(0, start - 2), a_end - 1)  # overlapping spans by construction
    b_end = rng.randint(max(b_start, start) + 1, n)
    a = [(start, a_end, [f"a_{rng.randrange(10**9)}\n"])]
    b = [(b_start, b_end, [f"b_{rng.randrange(10**9)}\n"])]
    base, one, two = text_of(base_lines), text_of(apply(base_lines, a)), text_of(apply(base_lines, b))
    blocks = blocks_from_git(tmp_path, base, one, 1, "a") + blocks_from_git(tmp_path, base, two, 2, "b")
    edits, merged = combine(base, blocks)
    assert start < b_end and b_start < a_end
    lo, hi = min(start, b_start), max(a_end, b_end)
    where = f"base line {hi}" if hi == lo + 1 else f"base lines {lo + 1}-{hi}"
    assert merged.overlaps == [f"features 1, 2: {where}"]
    # the union resolution: feature 1's version of the span, then feature 2's
    union = base_lines[:lo] + apply(base_lines, a)[lo:hi - (a_end - start) + 1] + \
        apply(base_lines, b)[lo:hi - (b_end - b_start) + 1] + base_lines[hi:]
    assert merged.text == text_of(union)
    assert run_replacements(base, replacements(base, edits)) == merged.text
    assert merge_file(tmp_path, base, one, two)[0] > 0


def test_insertions_at_one_point_are_kept_in_feature_order(tmp_path: Path) -> None:
    base = "def a():\n    return 1\n"
    one, two = base + "\n\ndef b():\n    return 2\n", base + "\n\ndef c():\n    return 3\n"
    blocks = blocks_from_git(tmp_path, base, two, 2, "b") + blocks_from_git(tmp_path, base, one, 1, "a")
    edits, merged = combine(base, blocks)
    assert merged.overlaps == []
    assert merged.text == base + "\n\ndef b():\n    return 2\n" + "\n\ndef c():\n    return 3\n"
    assert run_replacements(base, replacements(base, edits)) == merged.text
    assert merge_file(tmp_path, base, one, two)[0] > 0  # git conflicts here; the union would give the same


@pytest.mark.parametrize("seed", range(40))
def test_replacements_are_unique_in_repetitive_files(seed: int) -> None:
    rng = random.Random(5000 + seed)
    pool = ["\n", "    pass\n", "    return x\n", "x = 1\n", "}\n"]
    n = rng.randint(3, 40)
    base_lines = [rng.choice(pool) for _ in range(n)]
    taken: set[int] = set()
    edits = sorted(random_edits(rng, n, "a", taken, 0) + random_edits(rng, n, "b", taken, 0))
    edits = [e for k, e in enumerate(edits) if k == 0 or e[0] >= edits[k - 1][1]]
    base = text_of(base_lines)
    expected = text_of(apply(base_lines, edits))
    assert run_replacements(base, replacements(base, edits)) == expected


def test_blocks_of_a_new_file_and_a_zero_context_insertion() -> None:
    assert blocks_of(3, [["+x", "+y"]], [0]) == [blocks_of(3, [["+x", "+y"]], [0])[0]]
    (b,) = blocks_of(3, [["+x", "+y"]], [0])
    assert (b.start, b.end, b.new) == (0, 0, ("x\n", "y\n"))
    (b,) = blocks_of(1, [["+z"]], [16])  # @@ -16,0 +17 @@: after line 16
    assert (b.start, b.end) == (16, 16)
    (b,) = blocks_of(1, [[" c", "-d", "+e", " f"]], [4])
    assert (b.start, b.end, b.new) == (4, 5, ("e\n",))
