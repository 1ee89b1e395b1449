"""Thin, checked wrappers around the git command line (real git, run as a subprocess).

Evaluation never writes into the task's clone: it works in a scratch repository made with
`git clone --shared` (objects borrowed through alternates, so a bare mirror of a large
project costs nothing to copy).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

#: a git identity for evaluation commits, so no user configuration is needed
_IDENTITY = {"GIT_AUTHOR_NAME": "masgrid-eval", "GIT_AUTHOR_EMAIL": "eval@masgrid.invalid",
             "GIT_COMMITTER_NAME": "masgrid-eval", "GIT_COMMITTER_EMAIL": "eval@masgrid.invalid"}


class GitError(RuntimeError):
    """A git command that had to succeed failed; the message is one line."""


def git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **_IDENTITY, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=full_env,
                          input=stdin, check=False)
    if check and done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise GitError(f"git {' '.join(args[:3])} failed in {repo}: {tail[0]}")
    return done


def scratch_clone(clone: Path, base_commit: str, dest: Path) -> Path:
    """A private repository at `dest` with the base commit checked out (detached)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(clone), str(dest)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GitError(f"git clone --shared {clone} failed: {done.stderr.strip()[-200:]}")
    git(dest, "checkout", "--quiet", "--detach", base_commit)
    return dest


def reset_to(repo: Path, commit: str) -> None:
    """Working tree exactly at `commit`: no stray files, no ignored build outputs."""
    git(repo, "checkout", "--quiet", "--force", "--detach", commit)
    git(repo, "clean", "-qfdx")


#: the first `git apply` of a task's tests.patch, as the release's run_tests.sh has it:
#: `git apply --ignore-whitespace --ignore-space-change P || git apply --3way P`
TESTS_PATCH_FIRST = ("--ignore-whitespace", "--ignore-space-change")


def apply_patch(repo: Path, patch: str, name: str, first: tuple[str, ...] = ()) -> str:
    """Apply a diff to the working tree: "applied", "empty" or "failed". Tried with the options
    `first` (none: a plain apply, as the release applies agents' patches; TESTS_PATCH_FIRST for a
    tests.patch), then with `--3way`."""
    if not patch.strip():
        return "empty"
    path = Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip()) / f"masgrid-{name}.patch"
    path.write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
    for extra in (first, ("--3way",)):
        if git(repo, "apply", "--whitespace=nowarn", *extra, str(path), check=False).returncode == 0:
            return "applied"
        git(repo, "reset", "--quiet", "--hard")
        git(repo, "clean", "-qfd")
    return "failed"


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


_MARKER = re.compile(r"^<{7}(?: |$)", re.MULTILINE)


def conflict_count(repo: Path) -> int:
    """Conflict hunks left by a merge: `<<<<<<<` markers in unmerged files (a file with none,
    e.g. modify/delete, counts once)."""
    names = git(repo, "diff", "--name-only", "--diff-filter=U").stdout.split("\n")
    total = 0
    for name in filter(None, names):
        path = repo / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        except OSError:
            text = ""
        total += max(1, len(_MARKER.findall(text)))
    return total


def unmerged_files(repo: Path) -> list[str]:
    return [n for n in git(repo, "diff", "--name-only", "--diff-filter=U").stdout.split("\n") if n]
