"""Merge-and-test evaluation on the synthetic pool: real git, real pytest, the real bwrap sandbox."""

from __future__ import annotations

import itertools
import re
import subprocess

import pytest

from masgrid.families.cooper.evaluate import agent_patch, evaluate_patches
from masgrid.families.cooper.gitops import scratch_clone
from masgrid.families.cooper.layout import CooperDataError
from masgrid.families.cooper.sandbox import sandbox_problem
from tests.families.cooper.synthetic_helpers import build_pool, eval_sandbox

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


@pytest.fixture(scope="module")
def setup(tmp_path_factory, cooper_cache):
    root = tmp_path_factory.mktemp("coop")
    pool, task = build_pool(root)
    return pool, task, eval_sandbox(), cooper_cache


@pytest.fixture(scope="module")
def gold_results(setup):
    pool, task, sandbox, cache = setup
    return {(i, j): evaluate_patches(task, {i: task.features[i].patch, j: task.features[j].patch}, pool.repos_dir,
                                     sandbox=sandbox, cache_dir=cache)
            for i, j in itertools.combinations(pool.features, 2)}


def _designed(kind: str) -> tuple[str, dict[str, int], bool]:
    """What each designed outcome means for (stage, conflicts, success), from the pool's docstring."""
    return {"clean": ("naive", {"naive": 0}, True), "union": ("union", {"naive": 1, "union": 0}, True),
            "union_breaks": ("union", {"naive": 1, "union": 0}, False)}[kind]


def test_every_gold_pair_gives_its_designed_outcome(setup, gold_results):
    pool, *_ = setup
    assert sorted(pool.expected.values()).count("clean") == 8
    for (i, j), result in gold_results.items():
        stage, conflicts, success = _designed(pool.expected[f"{i},{j}"])
        assert (result.merge_stage, result.conflicts, result.success) == (stage, conflicts, success), (i, j)
        assert result.setting == "coop" and result.sandbox == "bwrap"
        assert result.apply_status == {i: "applied", j: "applied"}
        for fid, tests in result.feature_tests.items():
            assert tests["tests_patch"] == "applied" and tests["exit_code"] is not None
            assert result.feature_pass[fid] == (tests["exit_code"] == 0 and tests["passed"] >= 1)
    # union keeps both slugify definitions; the later one (feature 2's, paper order) wins
    broken = gold_results[(1, 2)]
    assert broken.feature_pass == {1: False, 2: True}
    assert broken.feature_tests[1]["failed"] == 1 and "hello-world" in broken.feature_tests[1]["output_tail"]


def test_release_merge_order_flips_which_feature_breaks(setup):
    pool, task, sandbox, cache = setup
    result = evaluate_patches(task, {1: task.features[1].patch, 2: task.features[2].patch}, pool.repos_dir,
                              sandbox=sandbox, cache_dir=cache, first_is_ours=False)
    assert result.merge_stage == "union" and result.feature_pass == {1: True, 2: False}


def test_resolver_stage_runs_after_union_fails_a_test(setup):
    pool, task, sandbox, cache = setup
    calls: list[str] = []

    def resolver(snippet: str) -> str:
        """Keep both features' intent: feature 1's cleaning with feature 2's separator."""
        calls.append(snippet)
        region = re.search(r"<{7}.*?>{7}[^\n]*\n", snippet, re.DOTALL)
        merged = ('def slugify(text, sep="-"):\n    words = re.sub(r"[^\\w\\s]", "", text).lower().split()\n'
                  "    return sep.join(words)\n")
        return snippet[:region.start()] + merged + snippet[region.end():]

    result = evaluate_patches(task, {1: task.features[1].patch, 2: task.features[2].patch}, pool.repos_dir,
                              sandbox=sandbox, cache_dir=cache, resolver=resolver)
    assert len(calls) == 1 and calls[0].count("<<<<<<<") == 1
    assert result.merge_stage == "llm" and result.conflicts == {"naive": 1, "union": 0, "llm": 0}
    assert result.success and result.feature_pass == {1: True, 2: True}
    # a clean pair never reaches the resolver
    clean = evaluate_patches(task, {1: task.features[1].patch, 3: task.features[3].patch}, pool.repos_dir,
                             sandbox=sandbox, cache_dir=cache, resolver=lambda s: 1 / 0)
    assert clean.merge_stage == "naive" and clean.success


def test_solo_patch_and_agent_patch_from_a_worktree(setup, tmp_path):
    pool, task, sandbox, cache = setup
    tree = scratch_clone(pool.repos_dir / "textkit", task.base_commit, tmp_path / "agent")
    subprocess.run(["git", "-C", str(tree), "apply", "-"], input=task.features[3].patch + task.features[4].patch,
                   text=True, check=True)
    (tree / "textkit" / "extra.py").write_text("VALUE = 1\n")  # untracked new file: part of the patch
    (tree / "tests" / "test_mine.py").write_text("def test_x():\n    assert True\n")  # test file: dropped
    status_before = subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True,
                                   text=True).stdout
    patch = agent_patch(tree, task.base_commit)
    assert subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == status_before  # the agent's index is untouched
    assert re.findall(r"^diff --git a/(\S+)", patch, re.MULTILINE) == ["textkit/core.py", "textkit/extra.py"]
    solo = evaluate_patches(task, {3: patch}, pool.repos_dir, sandbox=sandbox, cache_dir=cache, features=[3, 4, 5])
    assert solo.setting == "solo" and solo.merge_stage == "single" and solo.conflicts == {}
    assert solo.feature_pass == {3: True, 4: True, 5: False} and not solo.success


def test_patches_that_do_not_apply_or_name_unknown_features(setup):
    pool, task, sandbox, cache = setup
    bogus = "diff --git a/textkit/core.py b/textkit/core.py\n--- a/textkit/core.py\n+++ b/textkit/core.py\n" \
            "@@ -1,1 +1,1 @@\n-no such line\n+x\n"
    result = evaluate_patches(task, {1: bogus, 3: task.features[3].patch}, pool.repos_dir, sandbox=sandbox,
                              cache_dir=cache)
    assert result.apply_status == {1: "failed", 3: "applied"}
    assert result.feature_pass == {1: False, 3: True} and any("did not apply" in n for n in result.notes)
    with pytest.raises(CooperDataError, match="no feature"):
        evaluate_patches(task, {1: bogus, 9: bogus}, pool.repos_dir, sandbox=sandbox, cache_dir=cache)


def test_three_agents_merge_in_turn(setup):
    """Appendix F's scaling: 3 branches merged one after another; 4 and 5 conflict, union resolves."""
    pool, task, sandbox, cache = setup
    result = evaluate_patches(task, {f: task.features[f].patch for f in (3, 4, 5)}, pool.repos_dir, sandbox=sandbox,
                              cache_dir=cache)
    assert result.merge_stage == "union" and result.conflicts == {"naive": 1, "union": 0}
    assert result.feature_pass == {3: True, 4: True, 5: True} and result.success


def test_a_conflict_union_cannot_resolve_fails_every_feature(setup, tmp_path):
    """One agent deletes core.py, the other edits it: modify/delete survives union -> failed."""
    pool, task, sandbox, cache = setup
    tree = scratch_clone(pool.repos_dir / "textkit", task.base_commit, tmp_path / "deleter")
    (tree / "textkit" / "core.py").unlink()
    deletion = agent_patch(tree, task.base_commit)
    assert deletion.startswith("diff --git a/textkit/core.py") and "deleted file mode" in deletion
    result = evaluate_patches(task, {1: deletion, 3: task.features[3].patch}, pool.repos_dir, sandbox=sandbox,
                              cache_dir=cache)
    assert result.merge_stage == "failed" and result.conflicts == {"naive": 1, "union": 1}
    assert result.feature_pass == {1: False, 3: False} and result.feature_tests == {} and not result.success
    assert any("no merge stage" in n for n in result.notes)


def test_tests_patch_is_applied_ignoring_whitespace_first_as_the_release_does(setup):
    """Issue 25: run_tests.sh applies a tests.patch with `git apply --ignore-whitespace
    --ignore-space-change`, and only if that fails with `--3way`. A tests.patch whose context
    differs from the tree only in whitespace (and that carries no blob ids for --3way) applies
    that way; a plain apply followed by --3way (the agents' patches) refuses it."""
    pool, task, sandbox, cache = setup
    # feature 3's tests plus one more assertion in tests/test_base.py, whose context lines have
    # runs of blanks where the base file has one (as a reformatted copy of the file would)
    tests_patch = task.features[3].tests_patch + (
        "diff --git a/tests/test_base.py b/tests/test_base.py\n"
        "--- a/tests/test_base.py\n"
        "+++ b/tests/test_base.py\n"
        "@@ -8,3 +8,4 @@\n"
        " def  test_truncate_keeps_short_text():\n"
        "     assert  truncate(\"abc\",  5) == \"abc\"\n"
        "+    assert truncate(\"abcdef\", 3) != \"abcdef\"\n"
        " \n")
    features = dict(task.features)
    features[3] = features[3].model_copy(update={"tests_patch": tests_patch})
    odd = task.model_copy(update={"features": features})
    result = evaluate_patches(odd, {3: task.features[3].patch, 4: task.features[4].patch}, pool.repos_dir,
                              sandbox=sandbox, cache_dir=cache)
    assert result.feature_tests[3]["tests_patch"] == "applied"
    assert result.feature_pass[3] is True

    from masgrid.families.cooper.gitops import TESTS_PATCH_FIRST, apply_patch

    repo = scratch_clone(pool.repos_dir / "textkit", task.base_commit, cache.parent / "ws-check")
    assert apply_patch(repo, tests_patch, "plain") == "failed"  # plain, then --3way: refused
    assert apply_patch(repo, tests_patch, "lenient", first=TESTS_PATCH_FIRST) == "applied"
