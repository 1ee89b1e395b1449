"""Per-task Python test environments: one virtual environment per requirement set, built once.

The release's scripts install the project with its `test` extra (falling back to the plain
project) plus pytest, pytest-xdist and pytest-mock, into a fresh environment per run. We do
the same install once per task, outside the sandbox (pip needs the network), and cache the
environment under `cache_dir/envs/<key>`, the key hashing the interpreter, the requirement
list and the base tree's packaging files. The project itself is then uninstalled again, so
the tests import the merged tree (put first on PYTHONPATH) and never a stale copy of the base.

A base tree without packaging files (our synthetic pool) needs only pytest: its environment
is a venv without pip whose `.pth` file exposes the running interpreter's pytest, so it is
built offline in well under a second. `TestEnv.mode` records which of the two it is.

A file lock serialises concurrent builds of the same key (several evaluations on one
machine); a build that died half-way has no `ready.json` and is rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

#: files whose contents decide what an install of the project pulls in
PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "uv.lock")
#: test tools every release script installs besides the project
TEST_TOOLS = ("pytest", "pytest-xdist", "pytest-mock")
#: seconds a pip install may take
PIP_TIMEOUT_S = 900


class TestEnvError(RuntimeError):
    """An environment could not be built; the message is one line."""

    __test__ = False


class TestEnv(BaseModel):
    """A ready environment: run tests with `python`."""

    __test__ = False

    key: str
    root: Path
    python: Path
    mode: Literal["pip", "host-pytest"]
    readable: list[Path] = Field(default_factory=list, description="extra read-only paths the tests need")
    variables: dict[str, str] = Field(default_factory=dict, description="environment variables for test runs")
    built_s: float = Field(description="seconds spent building (0 when reused from the cache)")
    reused: bool


def is_installable(tree: Path) -> bool:
    return any((tree / name).exists() for name in ("pyproject.toml", "setup.py", "setup.cfg"))


def env_key(tree: Path) -> str:
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    digest.update(json.dumps(TEST_TOOLS).encode())
    for name in PACKAGING_FILES:
        path = tree / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-") + b"\0")
    return digest.hexdigest()[:16]


def project_name(tree: Path) -> str | None:
    """The distribution name from pyproject.toml ([project] or poetry) or setup.cfg (None when none says)."""
    try:
        doc = tomllib.loads((tree / "pyproject.toml").read_text())
        name = doc.get("project", {}).get("name") or doc.get("tool", {}).get("poetry", {}).get("name")
        if name:
            return str(name)
    except (OSError, tomllib.TOMLDecodeError):
        pass
    try:
        for line in (tree / "setup.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return None


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "--quiet", *args],
                          capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)


def _host_pytest_site() -> Path:
    import pytest  # the running interpreter's pytest (masgrid's test extra)

    return Path(pytest.__file__).resolve().parent.parent


def _build(tree: Path, root: Path) -> tuple[Literal["pip", "host-pytest"], list[Path]]:
    base_python = Path(sys.executable)
    if not is_installable(tree):
        done = subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(root)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise TestEnvError(f"python -m venv failed: {done.stderr.strip()[-200:]}")
        site = _host_pytest_site()
        purelib = next((root / "lib").glob("python*/site-packages"))
        (purelib / "masgrid_host_pytest.pth").write_text(f"{site}\n", encoding="utf-8")
        return "host-pytest", [site]
    done = subprocess.run([str(base_python), "-m", "venv", str(root)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TestEnvError(f"python -m venv failed: {done.stderr.strip()[-200:]}")
    python = root / "bin" / "python"
    if _pip(python, "install", f"{tree}[test]").returncode != 0:
        plain = _pip(python, "install", str(tree))
        if plain.returncode != 0:
            raise TestEnvError(f"pip install of {tree} failed: {plain.stderr.strip().splitlines()[-1:]}")
    tools = _pip(python, "install", *TEST_TOOLS)
    if tools.returncode != 0:
        raise TestEnvError(f"pip install {' '.join(TEST_TOOLS)} failed: {tools.stderr.strip().splitlines()[-1:]}")
    name = project_name(tree)
    if name is None or _pip(python, "uninstall", "--yes", name).returncode != 0:
        raise TestEnvError(f"cannot uninstall the project from its test environment ({name or 'name unknown'}): "
                           "the tests would import a stale copy")
    return "pip", []


def ensure_env(tree: Path, cache_dir: Path) -> TestEnv:
    """The cached environment for the base tree `tree`, built on first use."""
    key = env_key(tree)
    envs = Path(cache_dir) / "envs"
    envs.mkdir(parents=True, exist_ok=True)
    root = envs / key
    ready = root / "ready.json"
    with open(envs / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists():
            meta = json.loads(ready.read_text())
            return _env(key, root, meta["mode"], [Path(p) for p in meta["readable"]], 0.0, True)
        shutil.rmtree(root, ignore_errors=True)
        start = time.monotonic()
        try:
            mode, readable = _build(tree, root)
        except subprocess.TimeoutExpired:
            raise TestEnvError(f"building the test environment took over {PIP_TIMEOUT_S} s") from None
        ready.write_text(json.dumps({"mode": mode, "readable": [str(p) for p in readable]}))
        return _env(key, root, mode, readable, time.monotonic() - start, False)


def _env(key: str, root: Path, mode: Literal["pip", "host-pytest"], readable: list[Path], built_s: float,
         reused: bool) -> TestEnv:
    variables = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"} if mode == "host-pytest" else {}
    return TestEnv(key=key, root=root, python=root / "bin" / "python", mode=mode, readable=readable,
                   variables=variables, built_s=built_s, reused=reused)
