"""Agents' checkouts: real git, real bubblewrap."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from masgrid.families.cooper.sandbox import SandboxSettings, sandbox_problem
from masgrid.families.cooper.workspace import (
    WorkspaceError,
    agent_sandbox,
    make_worktree,
    remove_worktree,
)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def source(tmp_path: Path) -> tuple[Path, str]:
    """A source clone whose base commit is not its newest one."""
    repo = tmp_path / "repos" / "lib"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@t")
    git(repo, "config", "user.name", "t")
    (repo / "lib.py").write_text("def f():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "lib.py").write_text("def f():\n    return 2\n")
    git(repo, "commit", "-qam", "later")
    git(repo, "tag", "v2")
    return repo, base


def test_checkouts_start_at_the_base_commit_on_their_branch(source: tuple[Path, str], tmp_path: Path) -> None:
    repo, base = source
    a = make_worktree(repo, base, tmp_path / "run" / "agent0", branch="agent0")
    b = make_worktree(repo, base, tmp_path / "run" / "agent1")
    for wt in (a, b):
        assert (wt / "lib.py").read_text() == "def f():\n    return 1\n"
        assert git(wt, "rev-parse", "HEAD") == base
    assert git(a, "rev-parse", "--abbrev-ref", "HEAD") == "agent0"
    # nothing past the base reaches the agent: no later commit, no tag, no future file version
    later = git(repo, "rev-parse", "main")
    objects = git(a, "cat-file", "--batch-all-objects", "--batch-check")
    assert later[:12] not in objects and git(a, "tag") == "" and len(objects.splitlines()) == 3
    assert make_worktree(repo, base[:10], tmp_path / "run" / "short").exists()  # abbreviated commit
    assert git(b, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached
    (a / "lib.py").write_text("changed\n")
    assert (b / "lib.py").read_text() == "def f():\n    return 1\n"
    assert git(repo, "status", "--porcelain") == ""


def test_bad_requests_give_one_line_errors(source: tuple[Path, str], tmp_path: Path) -> None:
    repo, base = source
    with pytest.raises(WorkspaceError, match=r"is not in .*fetch it"):
        make_worktree(repo, "0" * 40, tmp_path / "w1")
    with pytest.raises(WorkspaceError, match="not a git repository"):
        make_worktree(tmp_path, base, tmp_path / "w2")
    (tmp_path / "w3").mkdir()
    (tmp_path / "w3" / "x").write_text("x")
    with pytest.raises(WorkspaceError, match="not empty"):
        make_worktree(repo, base, tmp_path / "w3")
    with pytest.raises(WorkspaceError, match="refusing"):
        remove_worktree(tmp_path / "w3")
    assert (tmp_path / "w3" / "x").exists()


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_git_works_in_the_sandbox_but_git_metadata_is_read_only(source: tuple[Path, str], tmp_path: Path) -> None:
    repo, base = source
    a = make_worktree(repo, base, tmp_path / "run" / "agent0", branch="agent0")
    b = make_worktree(repo, base, tmp_path / "run" / "agent1", branch="agent1")
    config_before = (a / ".git" / "config").read_text()
    sb = agent_sandbox(SandboxSettings(timeout_s=20), a)
    res = sb.run("echo 'x = 1' >> lib.py && git status --porcelain && git diff --stat && git log --oneline | wc -l; "
                 "echo '[core]' >> .git/config; mkdir -p .git/hooks && echo evil > .git/hooks/post-merge; "
                 f"ls {a.parent}; cat {b}/lib.py", cwd=a)
    assert " M lib.py" in res.stdout and "1 file changed" in res.stdout
    assert res.stdout.splitlines()[3] == "1"  # the base commit only
    assert res.stderr.count("Read-only file system") == 2
    assert (a / ".git" / "config").read_text() == config_before
    assert not (a / ".git" / "hooks" / "post-merge").exists()
    assert "agent1" not in res.stdout and "return 1" not in res.stdout  # no view of the teammate
    remove_worktree(a)
    assert not a.exists() and b.exists()
    assert git(repo, "status", "--porcelain") == "" and git(repo, "rev-parse", "main") != base
