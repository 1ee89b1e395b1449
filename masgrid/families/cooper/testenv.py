"""Per-task Python test environments: one virtual environment per requirement set, built once.

The release's scripts install the project with its `test` extra (falling back to the plain
project) plus pytest, pytest-xdist and pytest-mock, into a fresh environment per run. We do
the same install once per task, outside the sandbox (pip needs the network), and cache the
environment under `cache_dir/envs/<key>`, the key hashing the interpreter, the requirement
list and the base tree's packaging files. The project itself is then uninstalled again, so
the tests import the merged tree (put first on PYTHONPATH) and never a stale copy of the base.

A base tree without packaging files (our synthetic pool) gets the test tools only
(`mode = "tools"`). Either way pytest is installed *into* the environment: nothing is
borrowed from the interpreter running masgrid, so a masgrid installed without its own `test`
extra evaluates exactly like one installed with it, and the agents' sandbox can be given
the same environment (read-only) to run the project's tests.

Health. pip runs with a cleaned environment (no PYTHONPATH, PYTHONHOME, user site, pip
target/prefix overrides), so a pytest reachable from the caller's PYTHONPATH can never make
pip skip installing one. After a build, and every time a cached environment is handed out,
`python -c "import pytest"` runs in it with a clean environment and pytest must come from
inside the environment; `ready.json` is the stamp of what the environment was built from
(format, interpreter, tools, packaging-file hashes, mode, pytest version). A cached
environment whose stamp does not match, or that fails the check, is rebuilt once (logged,
and `rebuilt` says why); one that still fails is a `TestEnvError` naming the environment,
which fails the run: an infrastructure fault is never scored as the agents' failure.

A file lock serialises concurrent builds of the same key (several evaluations on one
machine); a build that died half-way has no `ready.json` and is rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

#: files whose contents decide what an install of the project pulls in
PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "uv.lock")
#: test tools every release script installs besides the project
TEST_TOOLS = ("pytest", "pytest-xdist", "pytest-mock")
#: seconds a pip install may take
PIP_TIMEOUT_S = 900
#: seconds the health check may take
CHECK_TIMEOUT_S = 120
#: version of the stamp (ready.json) and of the build recipe; a change rebuilds every environment
STAMP_FORMAT = 2
#: variables that would make pip or the check see packages from outside the environment
_LEAKY_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONSTARTUP", "PYTHONSAFEPATH", "VIRTUAL_ENV",
                    "PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER", "PIP_REQUIRE_VIRTUALENV", "CONDA_PREFIX")

Mode = Literal["pip", "tools"]


class TestEnvError(RuntimeError):
    """An environment could not be built or is unusable; the message is one line naming it."""

    __test__ = False


class TestEnv(BaseModel):
    """A ready environment: run tests with `python`."""

    __test__ = False

    key: str
    root: Path
    python: Path
    mode: Mode
    readable: list[Path] = Field(default_factory=list, description="extra read-only paths the tests need")
    variables: dict[str, str] = Field(default_factory=dict, description="environment variables for test runs")
    built_s: float = Field(description="seconds spent building (0 when reused from the cache)")
    reused: bool
    pytest_version: str | None = None
    rebuilt: str | None = Field(None, description="why a cached environment was rebuilt (None: it was not)")

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"


def is_installable(tree: Path) -> bool:
    return any((tree / name).exists() for name in ("pyproject.toml", "setup.py", "setup.cfg"))


def build_source(tree: Path) -> dict[str, Any]:
    """What an environment for `tree` is built from: the recipe's format, the interpreter, the
    test tools and each packaging file's hash (recorded in the stamp; hashed into the key)."""
    files: dict[str, str | None] = {}
    for name in PACKAGING_FILES:
        path = tree / name
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return {"format": STAMP_FORMAT, "python": sys.version, "executable": str(Path(sys.executable).resolve()),
            "tools": list(TEST_TOOLS), "packaging": files}


def env_key(tree: Path) -> str:
    return hashlib.sha256(json.dumps(build_source(tree), sort_keys=True).encode()).hexdigest()[:16]


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


def clean_environment() -> dict[str, str]:
    """The caller's environment without what could make pip or Python see packages outside the
    environment being built (PYTHONPATH and friends); pip's own index settings are kept."""
    return {k: v for k, v in os.environ.items() if k not in _LEAKY_VARIABLES}


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "--quiet", *args],
                          capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False,
                          env={**clean_environment(), "PYTHONNOUSERSITE": "1"})


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


_CHECK = "import json, pytest; print(json.dumps({'version': pytest.__version__, 'file': pytest.__file__}))"


def check_env(root: Path) -> tuple[str | None, str | None]:
    """(pytest version, None) when `root/bin/python` imports pytest from inside `root` with a
    clean environment; else (None, one line saying what is wrong)."""
    python = Path(root) / "bin" / "python"
    if not python.exists():
        return None, f"{python} is missing"
    env = {"PATH": os.defpath, "HOME": str(root), "LANG": "C.UTF-8", "PYTHONNOUSERSITE": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run([str(python), "-c", _CHECK], capture_output=True, text=True, env=env,
                              timeout=CHECK_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"python -c 'import pytest' could not run: {exc}"
    if done.returncode != 0:
        return None, f"python -c 'import pytest' failed: {_last_line(done.stderr)}"
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, f"python -c 'import pytest' printed {done.stdout.strip()[-120:]!r}"
    here = Path(root).resolve()
    if here not in Path(found["file"]).resolve().parents:
        return None, f"pytest is imported from {found['file']}, outside the environment"
    return str(found["version"]), None


def _build(tree: Path, root: Path) -> Mode:
    base_python = Path(sys.executable)
    done = subprocess.run([str(base_python), "-m", "venv", str(root)], capture_output=True, text=True, check=False,
                          env=clean_environment())
    if done.returncode != 0:
        raise TestEnvError(f"python -m venv {root} failed: {_last_line(done.stderr)}")
    python = root / "bin" / "python"
    mode: Mode = "tools"
    if is_installable(tree):
        mode = "pip"
        if _pip(python, "install", f"{tree}[test]").returncode != 0:
            plain = _pip(python, "install", str(tree))
            if plain.returncode != 0:
                raise TestEnvError(f"test environment {root}: pip install of {tree} failed: {_last_line(plain.stderr)}")
    tools = _pip(python, "install", *TEST_TOOLS)
    if tools.returncode != 0:
        raise TestEnvError(f"test environment {root}: pip install {' '.join(TEST_TOOLS)} failed: "
                           f"{_last_line(tools.stderr)}")
    if mode == "pip":
        name = project_name(tree)
        if name is None or _pip(python, "uninstall", "--yes", name).returncode != 0:
            raise TestEnvError(f"test environment {root}: cannot uninstall the project ({name or 'name unknown'}): "
                               "the tests would import a stale copy")
    return mode


def _stamp_problem(stamp: dict[str, Any], source: dict[str, Any]) -> str | None:
    if stamp.get("format") != STAMP_FORMAT:
        return f"stamp format {stamp.get('format')!r}, this masgrid writes {STAMP_FORMAT}"
    if stamp.get("source") != source:
        return "built from other packaging files, tools or interpreter than this tree needs"
    if stamp.get("mode") not in ("pip", "tools"):
        return f"unknown mode {stamp.get('mode')!r}"
    return None


def ensure_env(tree: Path, cache_dir: Path) -> TestEnv:
    """The cached environment for the base tree `tree`, built on first use, checked on every use
    (see the module text); TestEnvError (one line naming the environment) when it cannot be had."""
    source = build_source(tree)
    key = env_key(tree)
    envs = Path(cache_dir) / "envs"
    envs.mkdir(parents=True, exist_ok=True)
    root = envs / key
    ready = root / "ready.json"
    with open(envs / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rebuilt: str | None = None
        if ready.exists():
            try:
                stamp = json.loads(ready.read_text())
                problem = _stamp_problem(stamp, source) if isinstance(stamp, dict) else "stamp is not an object"
            except (OSError, ValueError) as exc:
                stamp, problem = {}, f"unreadable stamp ({exc})"
            if problem is None:
                version, problem = check_env(root)
                if problem is None:
                    return _env(key, root, stamp["mode"], 0.0, True, version, None)
            rebuilt = problem
            log.warning("cached test environment %s is unusable (%s): rebuilding it", root, problem)
        shutil.rmtree(root, ignore_errors=True)
        start = time.monotonic()
        try:
            mode = _build(tree, root)
        except subprocess.TimeoutExpired:
            raise TestEnvError(f"test environment {root}: building took over {PIP_TIMEOUT_S} s") from None
        version, problem = check_env(root)
        if problem is not None:
            raise TestEnvError(f"test environment {root} was built but cannot run pytest: {problem}")
        stamp = {"format": STAMP_FORMAT, "mode": mode, "source": source, "pytest": version,
                 "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        ready.write_text(json.dumps(stamp, indent=1, sort_keys=True))
        return _env(key, root, mode, time.monotonic() - start, False, version, rebuilt)


def _env(key: str, root: Path, mode: Mode, built_s: float, reused: bool, version: str | None,
         rebuilt: str | None) -> TestEnv:
    # plugins are those installed into the environment on purpose (the release does not disable them)
    return TestEnv(key=key, root=root, python=root / "bin" / "python", mode=mode, readable=[], variables={},
                   built_s=built_s, reused=reused, pytest_version=version, rebuilt=rebuilt)
