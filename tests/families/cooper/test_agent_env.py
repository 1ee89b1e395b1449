"""Item 9 of issue 25: agents get the task's test environment read-only in their sandbox.

The paper's agents work in containers that hold the project's runtime dependencies; ours
run in bubblewrap, which mounts only /usr, /etc and the worktree. The session therefore
builds the evaluator's own test environment before the agents start and hands it to every
agent's sandbox read-only, with its interpreter first on PATH and the worktree's import
root on PYTHONPATH: a shell command can import pytest and run the project's tests (the
worktree's code, not a copy), but cannot write to the environment or reach the network."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, cooper_cache):
    root = tmp_path_factory.mktemp("agentenv")
    pool = write_synthetic_pool(root / "pool")
    task = get_task(f"cooper/{pool.pool}/{pool.task_id}")
    instance = task.generate(2, 0, 0, features=[1, 2], data_dir=str(pool.data_dir),
                             repos_dir=str(pool.repos_dir), cache_dir=str(cooper_cache), sandbox="bwrap")
    opened = task.open_session(instance)
    yield opened
    opened.close()


def bash(session, command: str, agent: int = 0):
    return asyncio.run(session.call(agent, "bash", {"command": command}))


def test_the_session_holds_the_evaluators_environment(session) -> None:
    assert session.env.python.exists() and session.env.pytest_version
    assert Path(session.env.root).parent.name == "envs"


def test_agent_imports_pytest_and_runs_the_projects_tests(session) -> None:
    result = bash(session, "python -c 'import pytest, sys; print(pytest.__version__, sys.prefix)'")
    assert result.ok and f"\n{session.env.pytest_version} " in result.text, result.text
    assert str(session.env.root) in result.text
    result = bash(session, "python -m pytest -q tests 2>&1 | tail -3; pytest --version")
    assert result.ok and result.text.startswith("exit code 0\n") and " passed" in result.text, result.text
    assert f"pytest {session.env.pytest_version}" in result.text


def test_tests_import_the_worktree_code(session) -> None:
    """The project is not installed in the environment: the agent's own edits are what run."""
    tree = session.worktrees[0]
    (tree / "tests" / "test_agent_probe.py").write_text(
        "import textkit\n\ndef test_where():\n    assert textkit.__file__.startswith(%r)\n" % str(tree))
    try:
        result = bash(session, "python -m pytest -q tests/test_agent_probe.py 2>&1 | tail -2")
        assert result.ok and "1 passed" in result.text, result.text
    finally:
        (tree / "tests" / "test_agent_probe.py").unlink()


def test_environment_is_read_only_and_writes_stay_in_the_worktree(session) -> None:
    site = next(Path(session.env.root).glob("lib/python*/site-packages"))
    result = bash(session, f"touch {site}/planted.pth; echo status=$?; python -m pip install --no-index nothing 2>&1 "
                           "| tail -1; touch /tmp/scratch && echo tmp-ok; touch planted && echo tree-ok")
    assert "status=1" in result.text and not (site / "planted.pth").exists(), result.text
    assert "tmp-ok" in result.text and "tree-ok" in result.text
    assert (session.worktrees[0] / "planted").exists()
    (session.worktrees[0] / "planted").unlink()
    other = bash(session, "test -e planted && echo seen || echo absent", agent=1)
    assert "absent" in other.text


def test_no_network_inside(session) -> None:
    result = bash(session, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "
                           "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\" "
                           "2>&1 | tail -1")
    interfaces = [line for line in result.text.splitlines() if line and ":" not in line and " " not in line]
    assert interfaces == ["lo"], result.text
    assert "Error" in result.text or "unreachable" in result.text.lower(), result.text
