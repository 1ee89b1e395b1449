"""The release validation does not rot: its shell re-run of the release evaluator's steps agrees
with masgrid's evaluator in the release's merge order on the synthetic pool, and its table
counts what the rows say."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from masgrid.families.cooper.evaluate import evaluate_patches
from masgrid.families.cooper.gitops import scratch_clone
from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.testenv import ensure_env
from masgrid.families.cooper.testrun import pytest_args
from tests.families.cooper.synthetic_helpers import build_pool, eval_sandbox

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
@pytest.mark.parametrize("pair, merge", [((1, 2), "union"), ((1, 3), "clean")])
def test_reference_steps_match_masgrid_in_the_release_order(tmp_path, monkeypatch, pair, merge, cooper_cache):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    validate = load("cooper_validate_release")
    pool, task = build_pool(tmp_path / "pool")
    clone = pool.repos_dir / "textkit"
    env = ensure_env(scratch_clone(clone, task.base_commit, tmp_path / "base"), cooper_cache)
    f1, f2 = pair
    work = tmp_path / "ref"
    work.mkdir()
    ref = validate.reference_pair(task, f1, f2, clone, env.python, ".", pytest_args(task.test_script), work)
    ours = evaluate_patches(task, {f: task.features[f].patch for f in pair}, pool.repos_dir, sandbox=eval_sandbox(),
                            cache_dir=cooper_cache, first_is_ours=False)
    assert ref["merge"] == merge and ours.merge_stage == {"clean": "naive"}.get(merge, merge)
    assert ref["pass"] == ours.feature_pass
    if pair == (1, 2):  # the release's order: feature 2's definition comes first and loses
        assert ref["pass"] == {1: True, 2: False}


def test_summary_table_counts_rows():
    validate = load("cooper_validate_release")
    rng = random.Random(4)
    rows = []
    for task in ("a_task/1", "b_task/2"):
        for k in range(rng.randint(3, 12)):
            agree = rng.random() < 0.7
            row = {"task": task, "pair": f"1,{k + 2}", "agree_conflict": rng.random() < 0.8, "agree_outcome": agree,
                   "ours_wall_s": rng.uniform(1, 9), "ref_wall_s": rng.uniform(1, 9)}
            if not agree:
                row["agree_in_release_order"] = rng.random() < 0.5
            rows.append(row)
    lines = validate.summary_table(rows).splitlines()[2:]
    for task, line in zip(("a_task/1", "b_task/2"), lines):
        rs = [r for r in rows if r["task"] == task]
        rest = [r for r in rs if not r["agree_outcome"]]
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:5] == [task, str(len(rs)), f"{sum(r['agree_conflict'] for r in rs)}/{len(rs)}",
                             f"{len(rs) - len(rest)}/{len(rs)}",
                             f"{sum(r['agree_in_release_order'] for r in rest)}/{len(rest)}"]
        ours = sorted(r["ours_wall_s"] for r in rs)
        assert float(cells[5]) == pytest.approx(ours[len(ours) // 2], abs=0.05)
