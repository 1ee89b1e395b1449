"""Each agent's own checkout of the task repository at the base commit.

The paper gives every agent its own container with the repository; we give every agent
its own git repository directory holding the base commit and nothing else: a fresh
`git init` that fetches only the base commit (depth 1) from the local source clone, then
checks it out (on `branch`, or detached). Two choices, both for isolation:
- not `git worktree add`: a linked worktree keeps its git metadata inside the shared clone,
  next to the other agents', so the sandbox would have to expose that directory;
- not a full or `--shared` clone: the source clone usually holds the upstream history past
  the base commit, i.e. the real implementation of the features; an agent that can list
  all objects (`git cat-file --batch-all-objects`) could read it. Depth 1 hands over the
  base tree only (`git log` shows one commit).

Inside the sandbox the agent's `.git` is mounted read-only (`sandbox_mounts`): git status
and diff work, but the agent cannot plant hooks or config (e.g. `core.fsmonitor`) that
the host's own git calls on the worktree would run later. Agents deliver their work as
uncommitted changes; the evaluator diffs the worktree against the base commit.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from masgrid.families.cooper.sandbox import Sandbox, SandboxSettings

#: file in an agent's .git that marks a checkout made here (remove_worktree checks it)
MARKER = "masgrid-workspace"


class WorkspaceError(ValueError):
    """A checkout that cannot be made as asked (one-line message)."""


def _git(args: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise WorkspaceError(f"git {args[0]} failed: {why}")
    return proc.stdout


def make_worktree(clone: Path, base_commit: str, dest: Path, branch: str | None = None) -> Path:
    """A fresh checkout of `clone` at `base_commit` in `dest` (on a new `branch`, or detached)."""
    clone, dest = Path(clone).resolve(), Path(dest).absolute()
    if not (clone / ".git").exists() and not (clone / "objects").is_dir():
        raise WorkspaceError(f"not a git repository: {clone} (clone the task's source repository there)")
    if dest.exists() and any(dest.iterdir()):
        raise WorkspaceError(f"workspace directory is not empty: {dest}")
    probe = subprocess.run(["git", "-C", str(clone), "rev-parse", "--verify", "--quiet", f"{base_commit}^{{commit}}"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        raise WorkspaceError(f"base commit {base_commit} is not in {clone}: fetch it there (git fetch origin {base_commit})")
    commit = probe.stdout.strip()
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        _git(["init", "--quiet", str(dest)])
        # allowAnySHA1InWant: the base commit need not be reachable from a ref of the clone
        _git(["fetch", "--quiet", "--no-tags", "--depth=1",
              "--upload-pack", "git -c uploadpack.allowAnySHA1InWant=true upload-pack",
              f"file://{clone}", commit], cwd=dest)
        _git(["checkout", "--quiet", "-B", branch, commit] if branch else ["checkout", "--quiet", "--detach", commit],
             cwd=dest)
    except WorkspaceError:
        shutil.rmtree(dest / ".git", ignore_errors=True)
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    (dest / ".git" / MARKER).write_text(f"{clone}\n{commit}\n")
    # commits made on the host (e.g. by the evaluator) need an identity; agents cannot commit
    _git(["config", "user.name", "masgrid agent"], cwd=dest)
    _git(["config", "user.email", "agent@masgrid.invalid"], cwd=dest)
    return dest


def remove_worktree(worktree: Path) -> None:
    """Delete a checkout made by `make_worktree` (refuses anything that is not one)."""
    worktree = Path(worktree)
    if not worktree.exists():
        return
    if not (worktree / ".git" / MARKER).is_file():
        raise WorkspaceError(f"refusing to remove {worktree}: not a workspace made by make_worktree")
    shutil.rmtree(worktree)


def sandbox_mounts(worktree: Path) -> tuple[list[Path], list[Path]]:
    """(writable, readable) paths for an agent's sandbox: its worktree, with its `.git` read-only."""
    worktree = Path(worktree).resolve()
    return [worktree], [worktree / ".git"]


def agent_sandbox(settings: SandboxSettings, worktree: Path, readable: list[Path] | None = None,
                  env: dict[str, str] | None = None) -> Sandbox:
    """The sandbox an agent's tools run in: its own worktree and nothing of anyone else's, plus
    `readable` (read-only: the task's test environment) and `env` (variables of every command)."""
    writable, git_readable = sandbox_mounts(worktree)
    return Sandbox(settings, writable=writable, readable=git_readable + list(readable or []), env=env)
