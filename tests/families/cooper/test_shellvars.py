"""Values read from the release's shell scripts: unconditional defaults only, nothing guessed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from masgrid.families.cooper.layout import CooperDataError, feature_pairs, list_tasks, load_task, parse_setup
from masgrid.families.cooper.shellvars import assignments, expand, expand_words
from masgrid.families.cooper.testrun import pytest_args

SCRIPT = """#!/bin/bash
SPEC="tests/a.py tests/b.py"
ONE="tests/only.py"  # a comment
if [ -n "$4" ]; then
    SPEC="$4"
fi
IFS=' ' read -ra FILES <<< "$SPEC"
echo "RUNNING_TESTS..."
python -m pytest "${FILES[@]}" -v 2>&1
"""


def test_defaults_arrays_and_expansion():
    values = assignments(SCRIPT)
    assert values["SPEC"] == ["tests/a.py tests/b.py"]  # the indented, conditional one is ignored
    assert values["ONE"] == ["tests/only.py"] and values["FILES"] == ["tests/a.py", "tests/b.py"]
    assert expand("x/${ONE}/$ONE/$MISSING", values) == "x/tests/only.py/tests/only.py/$MISSING"
    assert expand_words(["${FILES[@]}", "$ONE", "-v"], values) == ["tests/a.py", "tests/b.py", "tests/only.py", "-v"]


def test_pytest_args_through_variables_and_inline_python():
    assert pytest_args(SCRIPT) == ["tests/a.py", "tests/b.py", "-v"]
    single = 'TEST_PATH="pkg/tests/test_x.py"\necho RUNNING_TESTS\npython -m pytest "$TEST_PATH" -v 2>&1\n'
    assert pytest_args(single) == ["pkg/tests/test_x.py", "-v"]
    inline = ("uv pip install \\\n  pytest pytest-mock\necho RUNNING_TESTS\n.venv/bin/python - <<'PY'\n"
              "import os, sys, pytest\ncode = pytest.main([\"tests/t.py\", \"-v\"])\nPY\n")
    assert pytest_args(inline) == ["tests/t.py", "-v"]
    conditional = 'if [ -z "$X" ]; then\n  SPEC="tests/"\nfi\necho RUNNING_TESTS\npython -m pytest $SPEC -v\n'
    with pytest.raises(CooperDataError, match=r"shell values set only at run time \(\$SPEC\)"):
        pytest_args(conditional)


def test_clone_url_from_variables_and_commented_base():
    text = ('REPO_OWNER="typst"\nREPO_NAME="typst"\nBASE_COMMIT="b8034a343831e8609aec2ec81eb7eeda57aa5d81"  # before\n'
            'if [ ! -d "$REPO_NAME" ]; then\n    git clone https://github.com/${REPO_OWNER}/${REPO_NAME} "$REPO_NAME"\nfi\n')
    assert parse_setup(text, Path("setup.sh")) == ("typst/typst", "b8034a343831e8609aec2ec81eb7eeda57aa5d81")


RELEASE = Path(os.environ.get("COOPERBENCH_RELEASE", "/work/.mirror/cooperbench+CooperBench/repo"))


@pytest.mark.skipif(not RELEASE.exists(), reason="no local copy of the CooperBench release (COOPERBENCH_RELEASE)")
def test_the_whole_release_loads_with_the_papers_totals(tmp_path):
    """Appendix B, Table 2: 199 features and 652 pairs; every Python pool but one names its tests."""
    archive = subprocess.run(["git", "-C", str(RELEASE), "archive", "HEAD", "dataset"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    data = tmp_path / "dataset"
    tasks = [load_task(data, pool, tid) for pool, tid in list_tasks(data)]
    assert sum(len(t.features) for t in tasks) == 199
    assert sum(len(feature_pairs(t)) for t in tasks) == 652
    refused = set()
    for task in tasks:
        try:
            pytest_args(task.test_script)
        except CooperDataError:
            refused.add(task.pool)
    assert refused == {"go_chi_task", "react_hook_form_task", "typst_task", "openai_tiktoken_task"}
