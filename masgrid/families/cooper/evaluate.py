"""Merge-and-test evaluation of agents' patches (section 2.2, appendix C), deterministic and sandboxed.

`evaluate_patches` takes one patch per agent (coop: one per feature; solo: a single patch
for all features) from anywhere - a run's worktrees, the gold patches, a file - and:

1. commits each patch on its own branch from the base commit in a scratch clone (the
   task's clone is never written);
2. merges: naive -> union (only if naive conflicts) -> the resolver (only if one is given and
   union left conflicts or its merged tree failed a test);
3. for every feature: the merged tree at the merged commit, the feature's tests.patch
   applied, the task's pytest command run with the cached per-task environment inside the
   sandbox (no network, only the tree writable) under a time limit;
4. a feature passes when the command exits 0 with at least one test passed; the task
   succeeds when every feature passes.

Test files are removed from every patch before merging (as `agent_patch` does), so an
agent cannot pass by editing the tests; what was removed is listed in `notes`.

Merge order: branches merge in feature order into the first feature's branch, so union keeps
the first feature's side of each conflict hunk first, as the paper's
`git merge-file -L patch_1 -L repo_state -L patch_2` does. (The released evaluator merges
the first agent into the second, i.e. the other order; `first_is_ours=False` reproduces it.)
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from masgrid.families.cooper.gitops import TESTS_PATCH_FIRST, GitError, apply_patch, git, reset_to, scratch_clone
from masgrid.families.cooper.layout import CooperDataError, CooperTaskData
from masgrid.families.cooper.merge import MergeAttempt, Resolver, make_branches, merge_branches
from masgrid.families.cooper.repos import require_base
from masgrid.families.cooper.sandbox import BASE_ENV, Sandbox, interpreter_paths
from masgrid.families.cooper.testenv import TestEnv, TestEnvError, ensure_env
from masgrid.families.cooper.testrun import (
    OUTPUT_TAIL,
    FeatureTestResult,
    feature_passes,
    import_root,
    parse_pytest_summary,
    pytest_args,
)

MergeStage = Literal["naive", "union", "llm", "failed", "single"]


class EvalResult(BaseModel):
    """What the evaluation of one task's patches found."""

    task: str = Field(description="<pool>/<task id>")
    features: list[int]
    setting: Literal["coop", "solo"]
    merge_stage: MergeStage = Field(description="last merge stage reached; failed: nothing merged")
    conflicts: dict[str, int] = Field(description="conflict hunks each attempted stage left (llm: files)")
    apply_status: dict[int, str] = Field(description='patch key -> "applied" | "empty" | "failed"')
    feature_pass: dict[int, bool]
    feature_tests: dict[int, dict[str, Any]]
    success: bool
    wall_s: float
    env: dict[str, Any] = Field(default_factory=dict, description="test environment key, mode, build seconds")
    sandbox: str = Field(description='"bwrap" or "none" (an explicit opt-out)')
    resolver_outcome: Literal["resolved", "failed"] | None = Field(
        None, description="the llm stage: resolved (a conflict-free tree, then tested), failed (see "
        "resolver_failure; the union result stands), null: not run")
    resolver_failure: str | None = Field(None, description="why the llm stage failed, region by region")
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- test-file exclusion

def is_test_path(path: str) -> bool:
    """Whether a repository path is a test file (excluded from agents' patches): a directory
    named test/tests, a file test_*, *_test.py or *tests.py (the release's rule, stated
    per path component)."""
    parts = path.strip("/").split("/")
    name = parts[-1]
    return (any(p in ("test", "tests") or p.startswith("test_") for p in parts[:-1])
            or name.startswith("test_") or name.endswith("_test.py") or name.endswith("tests.py"))


_DIFF_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def drop_test_files(patch: str) -> tuple[str, list[str]]:
    """The patch without its test-file sections, and the paths dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    skipping = False
    for line in patch.splitlines(keepends=True):
        header = _DIFF_HEADER.match(line.rstrip("\n"))
        if header:
            skipping = is_test_path(header.group(1)) or is_test_path(header.group(2))
            if skipping:
                dropped.append(header.group(2))
        if not skipping:
            kept.append(line)
    return "".join(kept), dropped


def agent_patch(worktree: Path, base_commit: str) -> str:
    """The worktree's changes against the base (untracked files included, ignored files not,
    test files excluded), as a binary-safe git diff. The worktree's own index is untouched."""
    index = Path(tempfile.mkstemp(prefix="masgrid-index-")[1])
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git(worktree, "read-tree", base_commit, env=env)
        git(worktree, "add", "-A", env=env)
        names = git(worktree, "diff", "--cached", "--no-renames", "--name-only", base_commit, env=env).stdout
        keep = [n for n in names.split("\n") if n and not is_test_path(n)]
        if not keep:
            return ""
        return git(worktree, "diff", "--cached", "--no-renames", "--binary", base_commit, "--", *keep,
                   env=env).stdout
    finally:
        index.unlink(missing_ok=True)


# ---------------------------------------------------------------- evaluation

def _run_feature_tests(task: CooperTaskData, fid: int, repo: Path, commit: str, env: TestEnv,
                       sandbox: Sandbox, args: list[str], timeout_s: float) -> FeatureTestResult:
    reset_to(repo, commit)
    status = apply_patch(repo, task.features[fid].tests_patch, f"tests{fid}", first=TESTS_PATCH_FIRST)
    if status != "applied":
        return FeatureTestResult(tests_patch="failed", exit_code=None, passed=0, failed=0, errors=0,
                                 timed_out=False, passed_feature=False, wall_s=0.0,
                                 output_tail=f"tests.patch of feature {fid} did not apply to the merged tree")
    box = env_sandbox(sandbox, repo, env)
    result = box.run([str(env.python), "-m", "pytest", *args], cwd=repo, timeout_s=timeout_s,
                     env=env_variables(env, repo))
    output = result.stdout + result.stderr
    no_pytest = _NO_PYTEST.search(output)
    if no_pytest and not parse_pytest_summary(result.stdout).summary_found:
        raise TestEnvError(f"test environment {env.root}: pytest could not be started for feature {fid} "
                           f"({no_pytest.group(0)}); an infrastructure fault, not the agents'")
    counts = parse_pytest_summary(result.stdout)
    return FeatureTestResult(tests_patch="applied", exit_code=result.exit_code, passed=counts.passed,
                             failed=counts.failed, errors=counts.errors, timed_out=result.timed_out,
                             passed_feature=feature_passes(result.exit_code, counts), wall_s=result.wall_s,
                             output_tail=output[-OUTPUT_TAIL:])


#: what Python says when the environment has no pytest (never a test outcome)
_NO_PYTEST = re.compile(r"No module named '?pytest'?(?![\w.])")


def env_variables(env: TestEnv, tree: Path) -> dict[str, str]:
    """Variables of a command that uses the test environment on `tree`: its interpreter and
    scripts first on PATH, the tree's import root (src/ or the tree) first on PYTHONPATH."""
    return {**env.variables, "PATH": f"{env.bin_dir}:{BASE_ENV['PATH']}", "VIRTUAL_ENV": str(env.root),
            "PYTHONPATH": str(import_root(tree))}


def env_readable(env: TestEnv) -> list[Path]:
    """Read-only paths a sandboxed command needs to use the environment (it and its base interpreter)."""
    return [*interpreter_paths(env.python), *env.readable]


def env_sandbox(sandbox: Sandbox, tree: Path, env: TestEnv) -> Sandbox:
    """`sandbox`'s settings with only `tree` writable and the environment readable."""
    return Sandbox(sandbox.settings, writable=[tree], readable=[*sandbox.readable, *env_readable(env)])


def check_env_in_sandbox(env: TestEnv, sandbox: Sandbox, tree: Path) -> None:
    """`python -c "import pytest"` with the environment, as the tests will run (inside the
    sandbox, same mounts and variables); TestEnvError naming the environment if it fails."""
    box = env_sandbox(sandbox, tree, env)
    result = box.run([str(env.python), "-c", "import pytest"], cwd=tree, timeout_s=120,
                     env=env_variables(env, tree))
    if result.exit_code != 0:
        why = (result.stderr.strip().splitlines() or [f"exit {result.exit_code}, killed={result.killed}"])[-1]
        raise TestEnvError(f"test environment {env.root} cannot import pytest in the sandbox: {why}")


def task_env(task: CooperTaskData, repos_dir: Path, cache_dir: Path) -> TestEnv:
    """The task's test environment (built on first use, checked on every use) from a scratch
    checkout of its base commit, before any agent starts. TestEnvError (one line) if none can be had."""
    clone = require_base(repos_dir, task)
    work = Path(tempfile.mkdtemp(prefix="env-", dir=_mkdir(Path(cache_dir) / "work")))
    try:
        return ensure_env(scratch_clone(clone, task.base_commit, work / "base"), Path(cache_dir))
    except GitError as exc:
        raise CooperDataError(f"{task.name}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _all_pass(tests: dict[int, FeatureTestResult]) -> bool:
    return all(t.passed_feature for t in tests.values())


def evaluate_patches(task: CooperTaskData, patches: dict[int, str], repos_dir: Path, *, sandbox: Sandbox,
                     cache_dir: Path, resolver: Resolver | None = None, features: list[int] | None = None,
                     timeout_s: float | None = None, first_is_ours: bool = True,
                     keep_work: bool = False) -> EvalResult:
    """Merge the patches and run every feature's tests on the result (see the module text).

    `patches` maps a feature id to that agent's patch (coop), or holds one patch (solo) with
    `features` naming what it must implement. `resolver` enables the llm stage."""
    start = time.monotonic()
    features = sorted(features if features is not None else patches)
    unknown = [f for f in [*features, *(patches if len(patches) > 1 else [])] if f not in task.features]
    if not patches or unknown:
        raise CooperDataError(f"{task.name}: no patches given" if not patches
                              else f"{task.name} has no feature(s) {sorted(set(unknown))}")
    setting: Literal["coop", "solo"] = "coop" if len(patches) > 1 else "solo"
    args = pytest_args(task.test_script)
    clone = require_base(repos_dir, task)
    notes: list[str] = []
    cleaned: dict[int, str] = {}
    order = sorted(patches) if first_is_ours else sorted(patches, reverse=True)
    for key in order:
        cleaned[key], dropped = drop_test_files(patches[key])
        if dropped:
            notes.append(f"patch {key}: test files dropped: {', '.join(dropped)}")
    work = Path(tempfile.mkdtemp(prefix="eval-", dir=_mkdir(Path(cache_dir) / "work")))
    try:
        repo = scratch_clone(clone, task.base_commit, work / "repo")
        env = ensure_env(repo, cache_dir)
        check_env_in_sandbox(env, sandbox, repo)
        if env.rebuilt:
            notes.append(f"test environment {env.key} was rebuilt: {env.rebuilt}")
        branches = make_branches(repo, task.base_commit, cleaned)
        conflicts: dict[str, int] = {}
        tests: dict[int, FeatureTestResult] = {}
        outcome: Literal["resolved", "failed"] | None = None
        failure: str | None = None

        def test_all(attempt: MergeAttempt) -> dict[int, FeatureTestResult]:
            assert attempt.commit is not None
            return {f: _run_feature_tests(task, f, repo, attempt.commit, env, sandbox, args,
                                          timeout_s or sandbox.settings.timeout_s) for f in features}

        if setting == "solo":
            stage: MergeStage = "single"
            tests = test_all(MergeAttempt(stage="single", conflicts=0, commit=branches.commits[order[0]]))
        else:
            stage = "failed"
            naive = merge_branches(repo, branches)
            conflicts["naive"] = naive.conflicts
            if naive.commit is not None:
                stage, tests = "naive", test_all(naive)
            else:
                union = merge_branches(repo, branches, union=True)
                conflicts["union"] = union.conflicts if union.commit is None else 0
                if union.commit is not None:
                    stage, tests = "union", test_all(union)
                if resolver is not None and (union.commit is None or not _all_pass(tests)):
                    llm = merge_branches(repo, branches, resolver=resolver)
                    conflicts["llm"] = 0 if llm.commit is not None else len(llm.unmerged)
                    if llm.commit is not None:
                        stage, tests, outcome = "llm", test_all(llm), "resolved"
                    else:
                        outcome = "failed"
                        why = list(getattr(resolver, "failures", []))
                        failure = "; ".join(why) or f"conflict markers left in {', '.join(llm.unmerged)}"
                        notes.append(f"llm stage failed ({failure}); "
                                     + ("the union result stands" if union.commit else "nothing merged"))
                        if union.commit is None:
                            stage = "failed"
        if stage == "failed":
            notes.append("no merge stage produced a tree without conflicts: every feature fails")
        failed_apply = [k for k, s in branches.apply_status.items() if s == "failed"]
        if failed_apply:
            notes.append(f"patch(es) {failed_apply} did not apply to the base commit; their branch is empty")
        feature_pass = {f: (tests[f].passed_feature if f in tests else False) for f in features}
        return EvalResult(
            task=task.name, features=features, setting=setting, merge_stage=stage, conflicts=conflicts,
            apply_status=branches.apply_status, feature_pass=feature_pass,
            feature_tests={f: t.model_dump() for f, t in tests.items()}, success=all(feature_pass.values()),
            wall_s=time.monotonic() - start,
            env={"key": env.key, "mode": env.mode, "built_s": round(env.built_s, 3), "reused": env.reused,
                 "pytest": env.pytest_version, "rebuilt": env.rebuilt},
            sandbox=sandbox.settings.kind, notes=notes, resolver_outcome=outcome, resolver_failure=failure)
    except GitError as exc:
        raise CooperDataError(f"{task.name}: {exc}") from None
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
