"""Runs the released code never recorded (issue 14, item 7): the scorer names them, the run
carries the flag, and masgrid still scores them.

The released scorers' arithmetic is restated here with plain division (from appendix B
and docs/agentsnet.md), so "would raise" is checked by Python raising, on random graphs
and answer sets, not by the condition the code under test uses.
"""

from __future__ import annotations

import random

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet import scoring as sc
from masgrid.families.agentsnet.tasks import reference_unscorable


def _released_vertex_cover(edges: list[tuple[int, int]], answers: list[str | None]) -> float:
    covered = sum(answers[u] == "Yes" or answers[v] == "Yes" for u, v in edges) / len(edges)
    size = essential = 0
    for u, a in enumerate(answers):
        if a == "Yes":
            size += 1
            others = [("No" if w == u else b) for w, b in enumerate(answers)]
            essential += sum(others[x] == "Yes" or others[y] == "Yes" for x, y in edges) / len(edges) < 1
    return covered * essential / size


def _released_coloring(edges: list[tuple[int, int]], answers: list[str | None]) -> float:
    return sum(answers[u] != answers[v] for u, v in edges) / len(edges)


def _raises(fn, *args) -> bool:
    try:
        fn(*args)
    except ZeroDivisionError:
        return True
    return False


def _random_graph(rng: random.Random) -> tuple[int, list[tuple[int, int]]]:
    n = rng.randint(1, 7)
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < rng.choice([0.0, 0.3, 0.7])]
    return n, edges


def test_flag_is_set_exactly_where_the_released_arithmetic_divides_by_zero() -> None:
    rng = random.Random(14)
    seen = {"no_coordinator": 0, "no_edges": 0, None: 0}
    for _ in range(4000):
        n, edges = _random_graph(rng)
        answers = [rng.choice(["Yes", "No", "No", None, "Maybe"]) for _ in range(n)]
        g = sc.ScoredGraph([f"A{i}" for i in range(n)], edges, answers)
        vc = sc.reference_failure("vertex_cover", g)
        assert (vc is not None) == _raises(_released_vertex_cover, edges, answers), (edges, answers)
        assert (sc.reference_failure("coloring", g) is not None) == _raises(_released_coloring, edges, answers)
        assert sc.reference_failure("matching", g) is None  # divides by the agent count, never 0 here
        for problem in ("leader_election", "consensus"):
            assert sc.reference_failure(problem, g) is None
        seen[vc] += 1
        if vc is None:  # where the released code scores, masgrid's score is the same number
            assert sc.vertex_cover_score(g).soft == pytest.approx(_released_vertex_cover(edges, answers))
    assert all(count > 100 for count in seen.values()), seen


def test_nobody_saying_yes_is_not_only_a_byzantine_case() -> None:
    task = get_task("agentsnet/vertex_cover")
    inst = task.generate(8, 1, 2, graph="dt")
    for answers in (["No"] * 8, [None] * 8, ["No"] * 7 + [None]):
        score = task.score(inst, answers)
        assert score.metrics["soft_score"] == 0.0 and score.metrics["reference_unscorable_reason"] == "no_coordinator"
        flags = task.run_metrics(inst, score, {"model_errors": 0})
        assert flags["reference_unscorable"] and flags["reference_unscorable_reason"] == "no_coordinator"
    fine = task.score(inst, ["Yes"] + ["No"] * 7)
    assert fine.metrics["reference_unscorable_reason"] is None


def test_model_errors_flag_every_problem() -> None:
    assert reference_unscorable(None, 0) == {"reference_unscorable": False, "reference_unscorable_reason": None}
    assert reference_unscorable(None, 3) == {"reference_unscorable": True, "reference_unscorable_reason": "model_error"}
    both = reference_unscorable("no_coordinator", 1)
    assert both == {"reference_unscorable": True, "reference_unscorable_reason": "model_error+no_coordinator"}
    task = get_task("agentsnet/consensus")
    inst = task.generate(4, 1, 0, graph="ws")
    score = task.score(inst, ["1"] * 4)
    assert score.success and task.run_metrics(inst, score, {"model_errors": 1})["reference_unscorable"]


def test_byzantine_honest_subgraph_without_edges() -> None:
    task = get_task("agentsnet/coloring")
    outcomes = set()
    for seed in range(30):
        for f in (1, 2, 3):
            inst = task.generate(4, 1, seed, graph="ba", byzantine="unaware", byzantine_count=f)
            bad = set(inst.meta["byzantine_agents"])
            names = inst.meta["names"]
            honest_edges = [e for e in inst.meta["edges"] if not {names.index(e[0]), names.index(e[1])} & bad]
            reason = task.score(inst, ["Group 1", "Group 2", "Group 3", "Group 1"]).metrics["reference_unscorable_reason"]
            assert (reason == "no_edges") == (not honest_edges) and reason in ("no_edges", None)
            outcomes.add(reason)
    assert outcomes == {"no_edges", None}
