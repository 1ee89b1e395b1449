"""Per-task test environments: built once per requirement set, then reused."""

from __future__ import annotations

from masgrid.envs.tasks.cooper.gitops import scratch_clone
from masgrid.envs.tasks.cooper.testenv import ensure_env, env_key, project_name
from tests.envs.tasks.cooper.synthetic_helpers import build_pool


def test_environment_is_built_once_per_requirement_set(tmp_path):
    pool, task = build_pool(tmp_path / "pool")
    tree = scratch_clone(pool.repos_dir / "textkit", task.base_commit, tmp_path / "t")
    first = ensure_env(tree, tmp_path / "c")
    again = ensure_env(tree, tmp_path / "c")
    assert (first.reused, again.reused) == (False, True) and first.key == again.key
    assert first.mode == "host-pytest" and first.python.exists()
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
