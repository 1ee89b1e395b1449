"""Merging the agents' patches: naive three-way merge, then union, then an optional resolver.

Each agent's patch is committed on its own branch from the base commit in a scratch
repository; the branches are merged in feature order into the first one (pairs: one merge;
3-4 agents: one merge per extra branch). Stages, as in section 2.2 and appendix C:

* naive - git's three-way merge (`git merge --no-commit`); conflict hunks are counted.
* union - the same merge with git's built-in `union` driver for every path (set through
  `.git/info/attributes`, so no file of the tree changes): each conflict hunk keeps both
  sides, ours first. Conflicts that are not line conflicts (modify/delete, binary files)
  survive the union driver and are counted.
* llm - only when a resolver is configured: every conflict region of the naive merge is
  handed to it with `CONTEXT_LINES` lines either side (fewer where two regions are closer
  than that: the lines between them are shared out) and replaced by its answer. The
  caller (evaluate.py) decides when to reach for it: after union leaves conflicts or its
  merged tree fails a test (appendix C).

Patches that do not apply are recorded per feature ("failed"); that branch then carries
no change, which the result shows rather than hides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from masgrid.families.cooper.gitops import apply_patch, commit_all, conflict_count, git, reset_to, unmerged_files

#: lines of context around a conflict region handed to the resolver (appendix C: c = 5)
CONTEXT_LINES = 5
#: a resolver maps a conflict region with its context to the text that replaces it
Resolver = Callable[[str], str]


class Branches(BaseModel):
    """The per-feature branches of one evaluation, committed in the scratch repository."""

    base: str
    commits: dict[int, str] = Field(description="feature id -> commit holding that agent's patch")
    apply_status: dict[int, str] = Field(description='feature id -> "applied" | "empty" | "failed"')


class MergeAttempt(BaseModel):
    """One merge stage: the conflict hunks it left and, if none, the merged commit."""

    stage: str
    conflicts: int
    commit: str | None = None
    unmerged: list[str] = Field(default_factory=list, description="paths still conflicted")


def make_branches(repo: Path, base: str, patches: dict[int, str]) -> Branches:
    commits: dict[int, str] = {}
    status: dict[int, str] = {}
    for fid, patch in patches.items():
        reset_to(repo, base)
        status[fid] = apply_patch(repo, patch, f"agent{fid}")
        commits[fid] = commit_all(repo, f"agent for feature {fid}")
    reset_to(repo, base)
    return Branches(base=base, commits=commits, apply_status=status)


def _union_attributes(repo: Path, on: bool) -> None:
    info = Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip()) / "info"
    info.mkdir(exist_ok=True)
    path = info / "attributes"
    if on:
        path.write_text("* merge=union\n", encoding="utf-8")
    elif path.exists():
        path.unlink()


def merge_branches(repo: Path, branches: Branches, *, union: bool = False,
                   resolver: Resolver | None = None) -> MergeAttempt:
    """Merge every branch into the first; stop at the first merge that leaves conflicts
    (after the resolver, when one is given). Conflicts are summed over the merges done."""
    stage = "llm" if resolver is not None else ("union" if union else "naive")
    order = list(branches.commits.values())
    reset_to(repo, order[0])
    _union_attributes(repo, union)
    total = 0
    try:
        for other in order[1:]:
            done = git(repo, "merge", "--no-ff", "--no-commit", "--no-edit", other, check=False)
            if done.returncode != 0:
                found = conflict_count(repo)
                total += found
                if found == 0:  # a failure without conflicts (should not happen): say so
                    return MergeAttempt(stage=stage, conflicts=1, unmerged=[done.stderr.strip()[-200:]])
                if resolver is not None:
                    left = resolve_conflicts(repo, resolver)
                    if left:
                        return MergeAttempt(stage=stage, conflicts=total, unmerged=left)
                else:
                    return MergeAttempt(stage=stage, conflicts=total, unmerged=unmerged_files(repo))
            commit_all(repo, f"{stage} merge")
        head = git(repo, "rev-parse", "HEAD").stdout.strip()
        return MergeAttempt(stage=stage, conflicts=total, commit=head)
    finally:
        git(repo, "merge", "--abort", check=False)
        _union_attributes(repo, False)


_REGION = re.compile(r"^<{7}(?: [^\n]*)?\n.*?^>{7}(?: [^\n]*)?(?:\n|$)", re.MULTILINE | re.DOTALL)


def context_shares(spans: list[tuple[int, int]], n_lines: int, context: int) -> list[tuple[int, int]]:
    """(lines before, lines after) each region's excerpt takes, regions given as line spans
    [first, end). Up to `context` either side, but never reaching into a neighbouring region:
    when fewer than 2*context lines separate two regions they are shared out (the lower one
    takes half, rounded down), so no excerpt holds another region's markers and no line is
    replaced twice."""
    shares: list[tuple[int, int]] = []
    for i, (first, end) in enumerate(spans):
        gap_up = first - (spans[i - 1][1] if i else 0)
        before = min(context, gap_up) if i == 0 else (context if gap_up >= 2 * context else gap_up // 2)
        gap_down = (spans[i + 1][0] if i + 1 < len(spans) else n_lines) - end
        if i + 1 < len(spans):
            lower = context if gap_down >= 2 * context else gap_down // 2
            after = min(context, gap_down - lower)
        else:
            after = min(context, gap_down)
        shares.append((before, after))
    return shares


def resolve_text(text: str, resolver: Resolver, context: int = CONTEXT_LINES) -> str:
    """Replace each conflict region, with up to `context` lines either side (`context_shares`),
    by the resolver's answer; regions are handled bottom-up so earlier line numbers stay valid."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    line_of = {offset: i for i, offset in enumerate(starts)}
    spans = []
    for match in _REGION.finditer(text):  # a region starts and ends at line boundaries
        spans.append((line_of[match.start()], line_of.get(match.end(), len(lines))))
    for (first, end), (before, after) in reversed(list(zip(spans, context_shares(spans, len(lines), context)))):
        lo, hi = first - before, end + after
        snippet = "".join(lines[lo:hi])
        answer = resolver(snippet)
        if answer and not answer.endswith("\n") and snippet.endswith("\n"):
            answer += "\n"
        lines[lo:hi] = [answer]
    return "".join(lines)


def resolve_conflicts(repo: Path, resolver: Resolver) -> list[str]:
    """Resolve every unmerged file in place; returns the paths that still hold markers."""
    left: list[str] = []
    for name in unmerged_files(repo):
        path = repo / name
        if not path.is_file():
            left.append(name)
            continue
        text = resolve_text(path.read_text(encoding="utf-8", errors="replace"), resolver)
        path.write_text(text, encoding="utf-8")
        if re.search(r"^(<{7}|>{7})", text, re.MULTILINE):
            left.append(name)
        else:
            git(repo, "add", "--", name)
    return left
