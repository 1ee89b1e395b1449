"""The test command, pytest's summary and the test-file rule, against independent computations."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from masgrid.families.cooper.evaluate import drop_test_files, is_test_path
from masgrid.families.cooper.layout import CooperDataError
from masgrid.families.cooper.testrun import feature_passes, parse_pytest_summary, pytest_args

#: the order pytest prints outcomes in its summary line
_ORDER = ["failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "warnings", "errors"]


def _summary_line(counts: dict[str, int], rng: random.Random) -> str:
    parts = []
    for key in _ORDER:
        n = counts.get(key, 0)
        if n:
            word = {"warnings": "warning", "errors": "error"}.get(key, key) if n == 1 else key
            parts.append(f"{n} {word}")
    body = ", ".join(parts) if parts else "no tests ran"
    body += f" in {rng.uniform(0, 99):.2f}s"
    return f"{'=' * rng.randint(5, 30)} {body} {'=' * rng.randint(5, 30)}" if rng.random() < 0.7 else body


def test_summary_parser_on_random_summaries():
    rng = random.Random(16)
    for _ in range(300):
        counts = {k: (rng.randint(0, 40) if rng.random() < 0.6 else 0) for k in _ORDER}
        noise = "\n".join(rng.choice(["tests/test_a.py::test_x PASSED [ 50%]", "collected 12 items",
                                      "E   assert 3 passed", "some output 2 failed in", ""])
                          for _ in range(rng.randint(0, 8)))
        # an earlier, nested summary (e.g. pytester) must not win over the last one
        earlier = _summary_line({"passed": 99}, rng) + "\n" if rng.random() < 0.3 else ""
        out = parse_pytest_summary(earlier + noise + "\n" + _summary_line(counts, rng) + "\n")
        assert out.summary_found
        assert (out.passed, out.failed, out.errors, out.skipped) == (
            counts["passed"], counts["failed"], counts["errors"], counts["skipped"])
    nothing = parse_pytest_summary("Traceback (most recent call last):\nImportError: x\n")
    assert not nothing.summary_found and nothing.passed == 0


def test_pass_rule_needs_exit_zero_and_a_passed_test():
    rng = random.Random(3)
    for _ in range(100):
        code = rng.choice([0, 0, 1, 2, 5, None])
        passed = rng.choice([0, 1, 7])
        line = f"== {passed} passed in 0.1s ==" if passed else "== no tests ran in 0.1s =="
        assert feature_passes(code, parse_pytest_summary(line)) is (code == 0 and passed > 0)


def test_real_pytest_output_counts(tmp_path):
    """A test file with known outcomes, run by the real pytest: counts and the pass rule match."""
    (tmp_path / "test_known.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError('setup')\n\n"
        + "".join(f"def test_ok{i}():\n    assert True\n\n" for i in range(4))
        + "def test_bad():\n    assert 1 == 2\n\ndef test_err(broken):\n    pass\n\n"
        + "@pytest.mark.skip\ndef test_skipped():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_known.py"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"})
    counts = parse_pytest_summary(done.stdout)
    assert (counts.passed, counts.failed, counts.errors, counts.skipped) == (4, 1, 1, 1)
    assert done.returncode == 1 and not feature_passes(done.returncode, counts)


def test_pytest_args_from_release_style_scripts():
    script = ('#!/bin/bash\nset -e\nuv pip install pytest pytest-xdist pytest_mock \\\n  && echo ok\n'
              'echo "RUNNING_TESTS..."\n.venv/bin/python -m pytest tests/test_a.py tests/test_b.py -v 2>&1\n'
              'echo "TEST_EXECUTION_COMPLETED"\n')
    assert pytest_args(script) == ["tests/test_a.py", "tests/test_b.py", "-v"]
    runner = "cd /workspace/repo\npip install pytest\n# Run tests\npython -m pytest tests/test_other.py -v\n"
    assert pytest_args(runner) == ["tests/test_other.py", "-v"]
    assert pytest_args("echo RUNNING_TESTS\npytest -x 'tests/a b.py' | tee log\n") == ["-x", "tests/a b.py"]
    with pytest.raises(CooperDataError, match="runs no pytest"):
        pytest_args("echo RUNNING_TESTS\ngo test ./... -v\n")


def _release_rule(path: str) -> bool:
    """The release's substring test on a `diff --git` header line (written from its description)."""
    line = f"diff --git a/{path} b/{path}"
    return any(s in line for s in ("/test_", "/tests/", "_test.py", "/test/", "tests.py"))


def test_test_file_rule_agrees_with_the_release_on_random_paths():
    rng = random.Random(7)
    dirs = ["src", "pkg", "tests", "test", "test_utils", "docs", "testing", "contest", "lib"]
    files = ["a.py", "test_a.py", "a_test.py", "tests.py", "mytests.py", "conftest.py", "contest.py",
             "testing.py", "README.md", "x.go", "util.py"]
    for _ in range(500):
        path = "/".join([rng.choice(dirs) for _ in range(rng.randint(0, 3))] + [rng.choice(files)])
        assert is_test_path(path) == _release_rule(path), path


def test_drop_test_files_keeps_other_sections():
    sections = {p: f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-x\n+y\n"
                for p in ["src/a.py", "tests/test_a.py", "b.py", "pkg/test_b.py"]}
    kept, dropped = drop_test_files("".join(sections.values()))
    assert kept == sections["src/a.py"] + sections["b.py"]
    assert dropped == ["tests/test_a.py", "pkg/test_b.py"]
