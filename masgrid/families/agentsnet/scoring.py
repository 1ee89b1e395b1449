"""Soft scores and binary success of the five AgentsNet problems (appendix B).

The soft scores follow the released reference implementation (floriangroetschla/AgentsNet),
which the paper's tables were computed with; an instance is solved when its soft score
is exactly 1. Answers are the agents' parsed final answers: one of the agent's valid
options as a string, or None when the final answer could not be parsed after its retry.

How an unparsable (None) answer scores, as in the reference:
- coloring, consensus, leader election: any invalid answer makes the score 0;
- matching: a None answer is one inconsistency of that agent;
- vertex cover: a None answer counts as "not a coordinator" (it is skipped, not rejected).

Vertex-cover minimality differs between the paper and the released code (docs/agentsnet.md):
the paper counts N = coordinators all of whose neighbours are coordinators and scores
coverage * (1 - N / #coordinators); the code counts a coordinator as essential when
turning it into a non-coordinator lowers coverage below 1, and scores
coverage * essential / #coordinators. They agree whenever the coordinators cover every
edge; when coverage < 1 the code counts every coordinator as essential (removing any
keeps coverage below 1), so its score is just the coverage. We follow the code and keep
the paper's formula as `vertex_cover_paper_score` for comparison. Where the code would
divide by zero (no coordinators, or no edges) we define the score explicitly below and
name the case (`reference_failure`), so the run is flagged `reference_unscorable`.

Byzantine runs (appendix I) score only honest agents: every function takes the graph
already restricted to the honest agents (see `restrict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

YES, NO, NONE = "Yes", "No", "None"


@dataclass
class ScoredGraph:
    """The graph a score is computed on: names, undirected edges (index pairs), answers."""

    names: list[str]
    edges: list[tuple[int, int]]
    answers: list[str | None]
    adjacency: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self.adjacency = [[] for _ in self.names]
        for u, v in self.edges:
            self.adjacency[u].append(v)
            self.adjacency[v].append(u)

    @property
    def n(self) -> int:
        return len(self.names)


@dataclass
class TaskScore:
    soft: float
    success: bool
    correct: list[bool]  # per scored agent: its local condition holds
    invalid: int  # answers that are None or not a valid option


def restrict(names: list[str], edges: list[tuple[int, int]], answers: list[str | None],
             keep: list[bool]) -> tuple[ScoredGraph, list[int]]:
    """The subgraph induced by the kept (honest) agents, and the original index of each."""
    index = [i for i, k in enumerate(keep) if k]
    pos = {i: j for j, i in enumerate(index)}
    sub_edges = [(pos[u], pos[v]) for u, v in edges if u in pos and v in pos]
    return ScoredGraph([names[i] for i in index], sub_edges, [answers[i] for i in index]), index


# -- coloring ------------------------------------------------------------------------------

def coloring_score(g: ScoredGraph, n_groups: int) -> TaskScore:
    groups = {f"Group {c}" for c in range(1, n_groups + 1)}
    valid = [a in groups for a in g.answers]
    good_edges = sum(g.answers[u] != g.answers[v] for u, v in g.edges)
    ratio = good_edges / len(g.edges) if g.edges else 1.0  # no edges: nothing can conflict
    soft = float(all(valid)) * ratio
    correct = [valid[u] and all(g.answers[w] != g.answers[u] for w in g.adjacency[u]) for u in range(g.n)]
    return TaskScore(soft, soft == 1.0, correct, valid.count(False))


# -- vertex cover --------------------------------------------------------------------------

def _coverage(g: ScoredGraph, chosen: list[bool]) -> float:
    if not g.edges:
        return 1.0
    return sum(chosen[u] or chosen[v] for u, v in g.edges) / len(g.edges)


def vertex_cover_score(g: ScoredGraph) -> TaskScore:
    """The released code's score: coverage * (#essential coordinators / #coordinators)."""
    chosen = [a == YES for a in g.answers]
    coverage = _coverage(g, chosen)
    essential = 0
    for u in range(g.n):
        if chosen[u]:
            without = list(chosen)
            without[u] = False
            essential += _coverage(g, without) < 1.0
    size = sum(chosen)
    # The code divides by #coordinators; with none chosen there is nothing minimal to reward:
    # 0 when an edge is left uncovered, 1 for an edgeless graph (the empty cover is minimal).
    soft = coverage * essential / size if size else (1.0 if not g.edges else 0.0)
    correct = []
    for u in range(g.n):
        covered = all(chosen[u] or chosen[w] for w in g.adjacency[u])
        needed = not chosen[u] or any(not chosen[w] for w in g.adjacency[u])
        correct.append(covered and needed)
    invalid = sum(a not in (YES, NO) for a in g.answers)
    return TaskScore(soft, soft == 1.0, correct, invalid)


def vertex_cover_paper_score(g: ScoredGraph) -> float:
    """Appendix B's formula: coverage * (1 - non-essential / #coordinators)."""
    chosen = [a == YES for a in g.answers]
    size = sum(chosen)
    if not size:
        return 1.0 if not g.edges else 0.0
    non_essential = sum(chosen[u] and all(chosen[w] for w in g.adjacency[u]) for u in range(g.n))
    return _coverage(g, chosen) * (1 - non_essential / size)


# -- answer sets the released code cannot score ------------------------------------------------

def reference_failure(problem: str, g: ScoredGraph) -> str | None:
    """Why the released code's scorer would raise (ZeroDivisionError) on this answer set.

    Its coloring and vertex-cover scores divide by the edge count, its vertex-cover score
    also by the number of "Yes" answers (so it fails whenever nobody says "Yes", including
    when no final answer could be read), its matching score by the agent count. The run is
    then lost there; masgrid scores it with the values defined above and flags it
    (`reference_unscorable`, docs/agentsnet.md)."""
    if problem in ("coloring", "vertex_cover") and not g.edges:
        return "no_edges"
    if problem == "vertex_cover" and not any(a == YES for a in g.answers):
        return "no_coordinator"
    if problem == "matching" and not g.n:
        return "no_agents"
    return None


# -- matching ------------------------------------------------------------------------------

def matching_score(g: ScoredGraph) -> TaskScore:
    """1 - inconsistencies / #agents; each agent contributes at most one inconsistency."""
    index = {name: i for i, name in enumerate(g.names)}
    correct = []
    for u in range(g.n):
        a = g.answers[u]
        if a == NONE:
            ok = all(g.answers[w] != NONE for w in g.adjacency[u])  # (c) two unmatched neighbours
        else:
            partner = index.get(a) if a is not None else None
            # (b) not a neighbour (also None = unparsable), (a) the choice is not returned
            ok = partner is not None and partner in g.adjacency[u] and g.answers[partner] == g.names[u]
        correct.append(ok)
    soft = sum(correct) / g.n if g.n else 1.0
    invalid = 0
    for u in range(g.n):
        options = {g.names[w] for w in g.adjacency[u]} | {NONE}
        invalid += g.answers[u] not in options
    return TaskScore(soft, soft == 1.0, correct, invalid)


# -- leader election and consensus ------------------------------------------------------------

def leader_election_score(g: ScoredGraph) -> TaskScore:
    valid = [a in (YES, NO) for a in g.answers]
    leaders = sum(a == YES for a in g.answers)
    ok = all(valid) and leaders == 1
    return TaskScore(float(ok), ok, [v and (leaders == 1) for v in valid], valid.count(False))


def consensus_score(g: ScoredGraph) -> TaskScore:
    valid = [a in ("0", "1") for a in g.answers]
    zeros = sum(a == "0" for a in g.answers)
    ok = all(valid) and zeros in (0, g.n)
    majority = "0" if zeros * 2 >= g.n else "1"
    return TaskScore(float(ok), ok, [a == majority for a in g.answers], valid.count(False))
