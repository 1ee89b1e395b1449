"""Scorers on hand-made answer sets, including invalid answers and the edge cases."""

from __future__ import annotations

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet import scoring as sc

NAMES = ["Ada", "Bo", "Cy", "Di"]
PATH = [(0, 1), (1, 2), (2, 3)]  # Ada - Bo - Cy - Di
TRIANGLE = [(0, 1), (1, 2), (0, 2)]


def g(edges: list[tuple[int, int]], answers: list[str | None], n: int = 4) -> sc.ScoredGraph:
    return sc.ScoredGraph(NAMES[:n], edges, answers)


def test_coloring() -> None:
    ok = sc.coloring_score(g(PATH, ["Group 1", "Group 2", "Group 1", "Group 2"]), 3)
    assert ok.soft == 1.0 and ok.success and all(ok.correct)
    clash = sc.coloring_score(g(PATH, ["Group 1", "Group 1", "Group 2", "Group 1"]), 3)
    assert clash.soft == pytest.approx(2 / 3) and not clash.success and clash.correct == [False, False, True, True]
    # One invalid answer (out of range, or unparsable) zeroes the soft score, as in the reference.
    assert sc.coloring_score(g(PATH, ["Group 1", "Group 2", "Group 1", "Group 4"]), 3).soft == 0.0
    bad = sc.coloring_score(g(PATH, ["Group 1", "Group 2", "Group 1", None]), 3)
    assert bad.soft == 0.0 and bad.invalid == 1
    assert sc.coloring_score(g([], ["Group 1", "Group 1"], 2), 1).soft == 1.0  # edgeless: no conflict


def test_vertex_cover_minimal_and_not() -> None:
    star = [(0, 1), (0, 2), (0, 3)]
    assert sc.vertex_cover_score(g(star, ["Yes", "No", "No", "No"])).success
    tri_all = g(TRIANGLE, ["Yes", "Yes", "Yes"], 3)
    assert sc.vertex_cover_score(tri_all).soft == 0.0 and sc.vertex_cover_paper_score(tri_all) == 0.0
    # Covered but Ada is redundant: both formulas give 1 * 1/2.
    redundant = g(PATH, ["Yes", "Yes", "No", "Yes"])
    assert sc.vertex_cover_score(redundant).soft == pytest.approx(2 / 3)
    assert sc.vertex_cover_paper_score(redundant) == pytest.approx(2 / 3)


def test_vertex_cover_code_and_paper_differ_when_not_covering() -> None:
    # Cy-Di is uncovered (coverage 2/3). The released code finds every coordinator
    # "essential" (removing it keeps coverage < 1) -> 2/3; the paper's formula counts Ada as
    # non-essential (her only neighbour is a coordinator) -> 2/3 * 1/2.
    partial = g(PATH, ["Yes", "Yes", "No", "No"])
    assert sc.vertex_cover_score(partial).soft == pytest.approx(2 / 3)
    assert sc.vertex_cover_paper_score(partial) == pytest.approx(1 / 3)


def test_vertex_cover_no_coordinators_and_unparsable() -> None:
    assert sc.vertex_cover_score(g(PATH, ["No"] * 4)).soft == 0.0  # the reference divides by zero here
    assert sc.vertex_cover_score(g([], ["No", "No"], 2)).success  # edgeless: the empty cover is minimal
    # An unparsable answer counts as "not a coordinator" (the reference skips it).
    res = sc.vertex_cover_score(g(PATH, [None, "Yes", "No", "Yes"]))
    assert res.success and res.invalid == 1


def test_matching() -> None:
    full = sc.matching_score(g(PATH, ["Bo", "Ada", "Di", "Cy"]))
    assert full.success and full.soft == 1.0
    # Cy has no free neighbour left, so 'None' is consistent; Di names a non-neighbour.
    assert sc.matching_score(g(PATH[:2], ["Bo", "Ada", "None"], 3)).success
    unrequited = sc.matching_score(g(PATH, ["Bo", "Cy", "Bo", "Cy"]))
    assert unrequited.soft == pytest.approx(2 / 4) and unrequited.correct == [False, True, True, False]
    stranger = sc.matching_score(g(PATH, ["Cy", "None", "Di", "Cy"]))
    assert stranger.correct[0] is False and stranger.invalid == 1
    # Two neighbours both unmatched: each counts once; an unparsable answer is one inconsistency.
    idle = sc.matching_score(g(PATH, ["None", "None", "Di", "Cy"]))
    assert idle.soft == pytest.approx(2 / 4)
    assert sc.matching_score(g(PATH, [None, "Cy", "Bo", "None"])).soft == pytest.approx(3 / 4)


def test_leader_election_and_consensus() -> None:
    assert sc.leader_election_score(g(PATH, ["No", "Yes", "No", "No"])).success
    assert not sc.leader_election_score(g(PATH, ["Yes", "Yes", "No", "No"])).success
    assert not sc.leader_election_score(g(PATH, ["No"] * 4)).success
    assert not sc.leader_election_score(g(PATH, ["No", "Yes", None, "No"])).success
    assert sc.consensus_score(g(PATH, ["1"] * 4)).success and sc.consensus_score(g(PATH, ["0"] * 4)).success
    mixed = sc.consensus_score(g(PATH, ["1", "1", "0", "1"]))
    assert not mixed.success and mixed.correct == [True, True, False, True]
    assert not sc.consensus_score(g(PATH, ["1", "1", None, "1"])).success


def test_byzantine_agents_are_not_scored() -> None:
    task = get_task("agentsnet/consensus")
    inst = task.generate(8, 1, 0, graph="ws", byzantine="unaware")
    bad = inst.meta["byzantine_agents"]
    assert len(bad) == 2 and [x["byzantine"] for x in inst.inputs].count(True) == 2
    answers = ["1" if i not in bad else "0" for i in range(8)]
    score = task.score(inst, answers)
    assert score.success and not any(score.correct[i] for i in bad)
    honest = next(i for i in range(8) if i not in bad)
    answers[honest] = None  # an honest agent without a valid answer still fails the run
    assert not task.score(inst, answers).success
