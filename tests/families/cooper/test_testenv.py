"""Per-task test environments: built once per requirement set, then reused; pytest lives
inside the environment (not borrowed from masgrid's interpreter); a cached environment is
checked before it is handed out, rebuilt when it cannot run pytest, and an environment that
cannot be made healthy is a one-line TestEnvError naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from masgrid.families.cooper import testenv
from masgrid.families.cooper.gitops import scratch_clone
from masgrid.families.cooper.testenv import TestEnvError, check_env, ensure_env, env_key, project_name
from tests.families.cooper.synthetic_helpers import build_pool

REPO = Path(__file__).resolve().parents[3]


def test_environment_is_built_once_per_requirement_set(tmp_path):
    pool, task = build_pool(tmp_path / "pool")
    tree = scratch_clone(pool.repos_dir / "textkit", task.base_commit, tmp_path / "t")
    first = ensure_env(tree, tmp_path / "c")
    again = ensure_env(tree, tmp_path / "c")
    assert (first.reused, again.reused) == (False, True) and first.key == again.key
    assert first.mode == "tools" and first.python.exists()
    version, problem = check_env(first.root)
    assert problem is None and version == first.pytest_version
    (tree / "requirements.txt").write_text("attrs\n")
    assert env_key(tree) != first.key


def test_project_name_from_packaging_files(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.poetry]\nname = "dirty-equals"\n')
    assert project_name(tmp_path) == "dirty-equals"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "textkit"\n')
    assert project_name(tmp_path) == "textkit"
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = Jinja2\nversion = 1\n")
    assert project_name(tmp_path) == "Jinja2"
    (tmp_path / "setup.cfg").unlink()
    assert project_name(tmp_path) is None


def _tree(tmp_path: Path) -> Path:
    pool, task = build_pool(tmp_path / "pool")
    return scratch_clone(pool.repos_dir / "textkit", task.base_commit, tmp_path / "t")


def _break(root: Path) -> None:
    """Make an environment unable to import pytest, whatever way it reached it."""
    for site in root.glob("lib/python*/site-packages"):
        for path in site.iterdir():
            if path.name.startswith(("pytest", "_pytest")) or path.suffix == ".pth":
                shutil.rmtree(path) if path.is_dir() else path.unlink()


def test_environment_has_its_own_pytest_when_masgrid_has_none(tmp_path):
    """Item 7: masgrid installed without its test extra (pytest not importable by the interpreter
    running masgrid) still builds a working test environment, with pytest inside it."""
    tree = _tree(tmp_path)
    script = (
        "import sys; sys.modules['pytest'] = None  # masgrid's interpreter has no pytest\n"
        "from pathlib import Path\n"
        "from masgrid.families.cooper.testenv import ensure_env, check_env\n"
        f"env = ensure_env(Path({str(tree)!r}), Path({str(tmp_path / 'c')!r}))\n"
        "print(check_env(env.root))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    version, problem = eval(done.stdout.strip().splitlines()[-1])
    assert problem is None and version


def test_pythonpath_at_build_time_does_not_leak_into_the_environment(tmp_path, monkeypatch):
    """Item 8: a pytest reachable through PYTHONPATH while the environment is built must not make
    pip skip installing one (the environment would then be unable to run pytest)."""
    fake = tmp_path / "elsewhere"
    (fake / "pytest").mkdir(parents=True)
    (fake / "pytest" / "__init__.py").write_text("__version__ = '0.0.fake'\n")
    info = fake / "pytest-99.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest\nVersion: 99.0\n")
    (info / "RECORD").write_text("")
    monkeypatch.setenv("PYTHONPATH", f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env = ensure_env(_tree(tmp_path), tmp_path / "c")
    version, problem = check_env(env.root)
    assert problem is None and version not in ("0.0.fake", "99.0")


def test_a_broken_cached_environment_is_rebuilt_not_reused(tmp_path, caplog):
    """Item 8: a cached environment that cannot run pytest is checked before use and rebuilt."""
    tree = _tree(tmp_path)
    first = ensure_env(tree, tmp_path / "c")
    _break(first.root)
    assert check_env(first.root)[1] is not None
    again = ensure_env(tree, tmp_path / "c")
    assert not again.reused and again.rebuilt and "pytest" in again.rebuilt
    assert check_env(again.root)[1] is None
    assert any("rebuilding" in r.getMessage() for r in caplog.records)


def test_a_stamp_from_another_source_is_rebuilt(tmp_path):
    tree = _tree(tmp_path)
    first = ensure_env(tree, tmp_path / "c")
    stamp = json.loads((first.root / "ready.json").read_text())
    assert stamp["format"] == testenv.STAMP_FORMAT and stamp["mode"] == "tools" and stamp["pytest"]
    assert stamp["source"]["packaging"]["pyproject.toml"] is None and stamp["source"]["tools"] == list(testenv.TEST_TOOLS)
    stamp["source"]["python"] = "2.7.18"
    (first.root / "ready.json").write_text(json.dumps(stamp))
    again = ensure_env(tree, tmp_path / "c")
    assert not again.reused and "other packaging files" in (again.rebuilt or "")


def test_an_environment_that_stays_broken_is_an_error_naming_it(tmp_path, monkeypatch):
    tree = _tree(tmp_path)
    real_build = testenv._build

    def build_without_pytest(tree: Path, root: Path) -> str:
        mode = real_build(tree, root)
        _break(root)
        return mode

    monkeypatch.setattr(testenv, "_build", build_without_pytest)
    with pytest.raises(TestEnvError) as caught:
        ensure_env(tree, tmp_path / "c")
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "c" / "envs") in message and "pytest" in message
    assert not (tmp_path / "c" / "envs" / env_key(tree) / "ready.json").exists()
