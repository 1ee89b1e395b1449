"""A task's test command: read from its script, run in the sandbox, its pytest summary parsed.

The release's `run_tests.sh` applies patches, builds an environment with uv and then runs
one pytest line (after `echo "RUNNING_TESTS..."`). We take only that pytest line's
arguments and run them with the task's cached environment (testenv.py), offline, inside the
sandbox. Tasks whose scripts run no pytest (Go, Rust, TypeScript pools) are refused with a
clear line rather than half-supported.

Pass rule (issue 16, as the reference evaluator decides it): exit status 0 and at least one
test passed. Counts come from pytest's final summary line only (`== 3 failed, 10 passed,
1 error in 0.52s ==`); an output with no summary line (a crash before collection, a kill)
counts as nothing passed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pydantic import BaseModel, Field

from masgrid.families.cooper.layout import CooperDataError
from masgrid.families.cooper.shellvars import assignments, expand_words, logical_lines, split

#: shell tokens that end the pytest command on its line
_STOP = {"2>&1", "|", "||", "&&", ";", ">", ">>", "2>", "&", "|&"}
#: an outcome in pytest's summary: "3 passed", "1 error", "2 warnings"
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)\b")
#: the summary line: outcomes (or "no tests ran") followed by the duration
_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran)\s+in\s+[\d.]+s\b.*$", re.MULTILINE)
#: pytest run from an inline Python block: pytest.main(["tests/x.py", "-v"])
_PYTEST_MAIN = re.compile(r"pytest\.main\((\[[^\]]*\])")
#: characters of output kept per feature in the result
OUTPUT_TAIL = 4000


class TestCounts(BaseModel):
    """Outcome counts from one pytest summary (zeros when there was none)."""

    __test__ = False  # not a pytest test class despite the name

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    summary_found: bool = False


class FeatureTestResult(BaseModel):
    """One feature's tests on the merged tree."""

    tests_patch: str = Field(description='"applied" | "failed" (the tests patch did not apply)')
    exit_code: int | None
    passed: int
    failed: int
    errors: int
    timed_out: bool
    passed_feature: bool
    wall_s: float
    output_tail: str


def pytest_args(test_script: str) -> list[str]:
    """The arguments of the script's pytest run (what follows `pytest`), e.g.
    ["tests/test_ext.py", "-v"]; the first run after RUNNING_TESTS wins when there is one.
    Variables set unconditionally in the script are expanded (shellvars.py); `pytest.main([...])`
    in an inline Python block counts too."""
    lines = logical_lines(test_script)
    values = assignments(test_script)
    marker = next((i for i, line in enumerate(lines) if "RUNNING_TESTS" in line), -1)
    for line in lines[marker + 1:] + lines[:marker + 1]:
        inline = _PYTEST_MAIN.search(line)
        if inline:
            try:
                return [str(a) for a in ast.literal_eval(inline.group(1))]
            except (ValueError, SyntaxError):
                continue
        words = split(line)
        at = _pytest_word(words or [])
        if at is None or {"pip", "uv"} & set(words or []):
            continue
        args: list[str] = []
        for word in (words or [])[at + 1:]:
            if word in _STOP or word.startswith((">", "2>")):
                break
            args.append(word)
        args = expand_words(args, values)
        unresolved = [a for a in args if "$" in a]
        if unresolved:
            raise CooperDataError(f"the task's pytest command uses shell values set only at run time "
                                  f"({' '.join(unresolved)}); masgrid does not guess them")
        return args
    raise CooperDataError("the task's run_tests.sh runs no pytest command; only pytest-based pools can be "
                          "evaluated here")


def _pytest_word(words: list[str]) -> int | None:
    """Index of the word that runs pytest (`pytest ...`, `.venv/bin/pytest ...`, `... -m pytest ...`)."""
    for i, word in enumerate(words):
        if (word == "pytest" and i > 0 and words[i - 1] == "-m") or (i == 0 and word.split("/")[-1] == "pytest"):
            return i
    return None


def parse_pytest_summary(output: str) -> TestCounts:
    """Counts from the last pytest summary line of `output`."""
    matches = list(_SUMMARY.finditer(output))
    if not matches:
        return TestCounts()
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for number, word in _COUNT.findall(matches[-1].group(1)):
        key = "errors" if word.startswith("error") else word
        if key in counts:
            counts[key] += int(number)
    return TestCounts(**counts, summary_found=True)


def feature_passes(exit_code: int | None, counts: TestCounts) -> bool:
    return exit_code == 0 and counts.passed >= 1


def import_root(tree: Path) -> Path:
    """Where the tree's packages live: `src/` for src-layout projects, else the tree itself."""
    src = tree / "src"
    if src.is_dir() and any(p.is_dir() and (p / "__init__.py").exists() for p in src.iterdir()):
        return src
    return tree
