"""From the agents' execution records to the run's score: merge, test, count (section 2.2).

Each execution submission is an agent's record (asynchronous scheduler): its patch (the
worktree's diff against the base, test files excluded), its action and message counts and
how it stopped. An agent that never produced a record counts as an empty patch, flagged in
`agents_without_patch`. The evaluator (evaluate.py) merges the patches naive -> union
(-> LLM), applies each feature's tests to the merged tree and runs them; a feature passes
when the test command exits 0 with at least one test passed, the task succeeds when every
feature passes. Solo evaluates its one patch against every feature.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from masgrid.sdk.tasks import Instance, Score


def patch_lines(patch: str) -> int:
    """Changed lines of a unified diff: added plus removed, headers excluded."""
    return sum(1 for line in patch.splitlines()
               if (line.startswith("+") and not line.startswith("+++")) or
               (line.startswith("-") and not line.startswith("---")))


def evaluation_sandbox(params: dict[str, Any]):  # -> Sandbox
    """The settings every test command runs under (the evaluator mounts each merged tree itself)."""
    from masgrid.families.cooper.sandbox import Sandbox, SandboxSettings

    return Sandbox(SandboxSettings(kind=params["sandbox"], timeout_s=float(params.get("test_timeout_s", 600.0))),
                   writable=[])


def _no_model(prompt: str) -> str:
    from masgrid.families.cooper.resolver import ResolverCallFailed

    raise ResolverCallFailed("no resolver model was given to the scorer (scored outside a run?)")


def score_patches(instance: Instance, answers: list[Any], data: Any,
                  ask: Callable[[str], str] | None = None) -> Score:
    """`ask(prompt) -> reply`: the resolver's model, used when cooper.resolver=llm (without it
    the llm stage, when reached, fails visibly)."""
    from masgrid.families.cooper.evaluate import evaluate_patches
    from masgrid.families.cooper.resolver import LLMResolver

    p = instance.params
    if len(answers) != instance.n_agents:
        raise ValueError(f"expected {instance.n_agents} agent records, got {len(answers)}")
    records = [a if isinstance(a, dict) else {} for a in answers]
    patches = [str(r.get("patch") or "") for r in records]
    owned: list[list[int]] = [list(e) for e in instance.expected]
    # coop/nocomm: feature id -> its agent's patch; solo: the one patch, tested against every feature
    by_feature = {fs[0]: patch for fs, patch in zip(owned, patches)}
    cache = Path(p["cache_dir"])
    cache.mkdir(parents=True, exist_ok=True)
    result = evaluate_patches(data, by_feature, Path(p["repos_dir"]), sandbox=evaluation_sandbox(p), cache_dir=cache,
                              resolver=LLMResolver(ask or _no_model) if p.get("resolver") == "llm" else None,
                              features=[int(f) for f in p["features"]])
    passed = {int(k): bool(v) for k, v in result.feature_pass.items()}
    correct = [all(passed.get(f, False) for f in fs) for fs in owned]
    partial = [sum(passed.get(f, False) for f in fs) / len(fs) for fs in owned]
    conflicts = dict(result.conflicts)
    metrics: dict[str, Any] = {
        "merge_stage": result.merge_stage,
        "conflicts_naive": conflicts.get("naive"),
        "conflicts_union": conflicts.get("union"),
        "conflicts_llm": conflicts.get("llm"),
        "resolver_outcome": result.resolver_outcome,
        "resolver_failure": result.resolver_failure,
        "feature_pass_json": json.dumps({str(k): v for k, v in sorted(passed.items())}),
        "features_passed": sum(passed.values()),
        "features_total": len(p["features"]),
        "actions_total": sum(int(r.get("actions", 0)) for r in records),
        "messages_total": sum(int(r.get("messages", 0)) for r in records),
        "patch_lines": sum(patch_lines(x) for x in patches),
        "agents_capped": sum(bool(r.get("capped")) for r in records),
        "agents_not_done": sum(r.get("finish") in ("partial", "blocked") for r in records),
        "agents_without_patch": sum(not r for r in records),
        "eval_wall_s": result.wall_s,
        "eval_notes": "; ".join(result.notes) or None,
    }
    return Score(success=bool(result.success), correct=correct, partial=partial, metrics=metrics)
