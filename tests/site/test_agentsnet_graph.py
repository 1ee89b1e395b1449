"""The graph's rule-breaking edges against a separate reading of the AgentsNet rules
(paper appendix B, docs/agentsnet.md) on many random graphs and answer sets."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from masgrid.families.agentsnet.site_panel import regenerate, violations

PROBLEMS = ("coloring", "vertex_cover", "matching", "consensus", "leader_election")


def _expected(problem: str, names, edges, answers, byzantine) -> set[tuple[int, int, str]]:
    honest_edges = [(u, v) for u, v in edges if u not in byzantine and v not in byzantine]
    adjacent = {frozenset(e) for e in honest_edges}
    bad = set()
    for u, v in honest_edges:
        a, b = answers[u], answers[v]
        if problem == "coloring" and a is not None and a == b:
            bad.add((u, v, "same colour"))
        if problem == "vertex_cover" and "Yes" not in (a, b):
            bad.add((u, v, "uncovered"))
        if problem == "consensus" and a != b:
            bad.add((u, v, "disagree"))
        if problem == "matching" and a == b == "None":
            bad.add((u, v, "both unmatched"))
    if problem == "matching":
        for u in range(len(names)):
            if u in byzantine or answers[u] not in names:
                continue
            w = names.index(answers[u])
            if frozenset((u, w)) in adjacent and answers[w] != names[u]:
                bad.add((u, w, "not returned"))
    return bad


@pytest.mark.parametrize("problem", PROBLEMS)
def test_violations_match_a_separate_reading_of_the_rules(problem):
    rng = random.Random(problem)
    for _ in range(200):
        n = rng.randint(2, 9)
        g = nx.gnp_random_graph(n, rng.uniform(0.2, 0.9), seed=rng.randint(0, 10**6))
        edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
        names = [f"A{i}" for i in range(n)]
        options = {"coloring": ["Group 1", "Group 2", "Group 3", None], "vertex_cover": ["Yes", "No", None],
                   "consensus": ["0", "1", None], "leader_election": ["Yes", "No"],
                   "matching": [*names, "None", None, "Nobody"]}[problem]
        answers = [rng.choice(options) for _ in range(n)]
        byzantine = set(rng.sample(range(n), rng.randint(0, n // 3)))
        got = {(v["u"], v["v"], v["why"]) for v in violations(problem, names, edges, answers, byzantine)}
        assert got == _expected(problem, names, edges, answers, byzantine)


def test_the_regenerated_graph_is_the_recorded_one(ui_results):
    import json

    import pandas as pd

    runs = pd.read_parquet(ui_results / "runs")
    for run in runs[runs["task"].str.startswith("agentsnet/")].itertuples():
        names, edges, _ = regenerate(json.loads(run.config_json))
        assert len(names) == run.agents and len(edges) == run.edges
        g = nx.Graph(edges)
        assert nx.diameter(g) == run.diameter and max(d for _, d in g.degree()) == run.max_degree
        prompts = pd.read_parquet(ui_results / "agents", filters=[("run_id", "==", run.run_id)])
        for row in prompts.itertuples():  # each agent was told its own name
            assert names[row.agent] in row.system_prompt
