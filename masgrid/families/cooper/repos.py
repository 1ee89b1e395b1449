"""Local clones of the source repositories: nothing is downloaded at run or evaluation time.

A task names its repository as "owner/name" (from setup.sh's clone URL). The clone may sit
in repos_dir under any of the names below, as a normal or a bare repository, so both
`git clone` output and the `fetch` tool's mirrors (`owner+name/repo`) work unchanged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from masgrid.families.cooper.layout import CooperDataError, CooperTaskData


def _candidates(repos_dir: Path, repo: str) -> list[Path]:
    owner, name = repo.split("/", 1)
    return [repos_dir / name, repos_dir / f"{owner}+{name}" / "repo", repos_dir / f"{owner}+{name}",
            repos_dir / owner / name]


def _is_git_dir(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def clone_path(repos_dir: Path, task: CooperTaskData) -> Path:
    """The local clone of the task's repository, or one line saying what to fetch and where."""
    repos_dir = Path(repos_dir)
    for path in _candidates(repos_dir, task.repo):
        if path.is_dir() and _is_git_dir(path):
            return path
    name = task.repo.split("/", 1)[1]
    raise CooperDataError(f"no clone of {task.repo} for {task.name}: fetch github:{task.repo} and place a "
                          f"clone at {repos_dir / name}")


def has_commit(clone: Path, commit: str) -> bool:
    done = subprocess.run(["git", "-C", str(clone), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True, check=False)
    return done.returncode == 0


def require_base(repos_dir: Path, task: CooperTaskData) -> Path:
    """The clone, checked to contain the task's base commit."""
    clone = clone_path(repos_dir, task)
    if not has_commit(clone, task.base_commit):
        raise CooperDataError(f"clone {clone} lacks base commit {task.base_commit} of {task.name}: "
                              f"fetch a newer github:{task.repo} (git -C {clone} fetch --all)")
    return clone
