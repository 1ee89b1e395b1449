"""The dataset layout loader and the local-clone lookup, on a pool written with real git."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from masgrid.families.cooper.layout import (CooperDataError, feature_pairs, list_tasks, load_subset, load_task,
                                              parse_setup, repo_from_url)
from masgrid.families.cooper.repos import clone_path, require_base
from tests.families.cooper.synthetic_helpers import build_pool


@pytest.fixture(scope="module")
def pool_task(tmp_path_factory):
    return build_pool(tmp_path_factory.mktemp("pool"))


def test_synthetic_pool_loads_in_the_release_layout(pool_task):
    pool, task = pool_task
    assert task.repo == "masgrid/textkit"
    assert task.base_commit == pool.base_commit
    assert sorted(task.features) == pool.features == [1, 2, 3, 4, 5]
    for feature in task.features.values():
        assert feature.patch.startswith("diff --git a/textkit/core.py")
        assert feature.tests_patch.startswith("diff --git a/tests/test_")
        assert feature.description.startswith("# ")
    assert list_tasks(pool.data_dir) == [("textkit_task", 1)]
    # the base commit is a real commit of the clone; its tree is the base library
    clone = require_base(pool.repos_dir, task)
    files = subprocess.run(["git", "-C", str(clone), "ls-tree", "-r", "--name-only", task.base_commit],
                           capture_output=True, text=True, check=True).stdout.split()
    assert sorted(files) == [".gitignore", "tests/test_base.py", "textkit/__init__.py", "textkit/core.py"]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_feature_pairs_are_all_combinations(pool_task, size):
    _, task = pool_task
    combos = feature_pairs(task, size)
    assert len(combos) == math.comb(5, size) == len(set(combos))
    assert all(len(c) == size and list(c) == sorted(c) for c in combos)


def test_setup_parsing_of_release_style_scripts():
    text = ('#!/bin/bash\nREPO_NAME="x-pr-1"\nBASE_COMMIT="0123456789abcdef0123456789abcdef01234567"\n'
            'if [ ! -d "$REPO_NAME" ]; then\n    git clone https://github.com/some-org/some.lib.git "$REPO_NAME"\nfi\n')
    assert parse_setup(text, Path("setup.sh")) == ("some-org/some.lib", "0123456789abcdef0123456789abcdef01234567")
    assert repo_from_url("git@github.com:pallets/jinja.git") == "pallets/jinja"
    with pytest.raises(CooperDataError, match="BASE_COMMIT"):
        parse_setup("git clone https://github.com/a/b\n", Path("setup.sh"))


def test_subset_lists(tmp_path):
    (tmp_path / "subsets").mkdir()
    doc = {"name": "lite", "tasks": [{"repo": "a_task", "task_id": 7, "pairs": [[1, 2], [2, 5]]},
                                     {"repo": "b_task", "task_id": 3, "pairs": [[4, 6]]}]}
    (tmp_path / "subsets" / "lite.json").write_text(json.dumps(doc))
    assert load_subset(tmp_path, "lite") == [("a_task", 7, (1, 2)), ("a_task", 7, (2, 5)), ("b_task", 3, (4, 6))]
    (tmp_path / "subsets" / "flash.json").write_text('{"tasks": [{"repo": "a"}]}')
    with pytest.raises(CooperDataError, match="flash.json"):
        load_subset(tmp_path, "flash")
    with pytest.raises(CooperDataError, match="missing subset list 'nope'"):
        load_subset(tmp_path, "nope")


def test_missing_files_are_one_line_errors_naming_the_place(pool_task, tmp_path):
    pool, task = pool_task
    copy = tmp_path / "data"
    shutil.copytree(pool.data_dir, copy)
    (copy / "textkit_task" / "task1" / "feature3" / "tests.patch").unlink()
    with pytest.raises(CooperDataError) as err:
        load_task(copy, "textkit_task", 1)
    assert "feature 3's tests.patch" in str(err.value) and "feature3/tests.patch" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(CooperDataError, match="no task directory"):
        load_task(copy, "textkit_task", 2)


def test_missing_clone_or_commit_names_what_to_fetch(pool_task, tmp_path):
    pool, task = pool_task
    with pytest.raises(CooperDataError, match="fetch github:masgrid/textkit"):
        clone_path(tmp_path, task)
    # the fetch tool's mirror naming is found too
    mirror = tmp_path / "masgrid+textkit" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(pool.repos_dir / "textkit"), str(mirror)], check=True)
    assert clone_path(tmp_path, task) == mirror
    stale = task.model_copy(update={"base_commit": "f" * 40})
    with pytest.raises(CooperDataError, match=f"lacks base commit {'f' * 40}"):
        require_base(tmp_path, stale)
