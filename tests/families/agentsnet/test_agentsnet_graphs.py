"""Graph generators: seeded, connected, planar Delaunay, expected degree statistics."""

from __future__ import annotations

import networkx as nx
import pytest

from masgrid.families.agentsnet.graphs import AgentGraph, first_names, generate_graph
from masgrid.families.agentsnet.tasks import byzantine_count, round_budget

SIZES = (4, 8, 16, 40)


@pytest.mark.parametrize("model", ["ws", "ba", "dt"])
def test_same_seed_same_graph_and_names(model: str) -> None:
    a, b = generate_graph(model, 16, 3), generate_graph(model, 16, 3)
    assert a == b
    c = generate_graph(model, 16, 4)
    assert (c.edges, c.names) != (a.edges, a.names)


@pytest.mark.parametrize("model", ["ws", "ba", "dt"])
@pytest.mark.parametrize("n", SIZES)
def test_connected_with_distinct_human_names(model: str, n: int) -> None:
    for seed in range(3):
        g = generate_graph(model, n, seed)
        graph = g.nx()
        assert graph.number_of_nodes() == n and nx.is_connected(graph)
        assert len(set(g.names)) == n and set(g.names) <= set(first_names())
        assert all(u < v for u, v in g.edges) and len(set(g.edges)) == len(g.edges)


@pytest.mark.parametrize("n", SIZES)
def test_degree_statistics(n: int) -> None:
    for seed in range(3):
        ws, ba, dt = (generate_graph(m, n, seed) for m in ("ws", "ba", "dt"))
        # Watts-Strogatz: the k = 4 ring lattice has 2n edges and rewiring keeps the count.
        if n > 4:
            assert len(ws.edges) == 2 * n
        else:
            assert len(ws.edges) == 6  # k >= n: the complete graph on 4 nodes
        # Barabasi-Albert m = 2: a 3-node star, then every node adds 2 edges.
        assert len(ba.edges) == 2 * n - 4 and min(ba.degrees()) >= 1
        # Delaunay: planar triangulation, at most 3n - 6 edges, every node on a triangle.
        assert nx.check_planarity(dt.nx())[0]
        assert n - 1 <= len(dt.edges) <= 3 * n - 6 and min(dt.degrees()) >= 2


def test_ba_has_hubs_and_dt_low_max_degree() -> None:
    ba = [max(generate_graph("ba", 100, s).degrees()) for s in range(3)]
    dt = [max(generate_graph("dt", 100, s).degrees()) for s in range(3)]
    assert min(ba) > max(dt)


def test_large_graphs_use_double_names() -> None:
    g = generate_graph("dt", 400, 0)
    assert len(set(g.names)) == 400 and any("-" in name for name in g.names)


def test_bad_arguments_name_the_key() -> None:
    with pytest.raises(ValueError, match="graph"):
        generate_graph("er", 8, 0)
    with pytest.raises(ValueError, match="agents"):
        generate_graph("ws", 3, 0)


def test_round_budget_and_byzantine_counts() -> None:
    assert [round_budget(False, n, 3) for n in (4, 8, 16)] == [4, 5, 6]
    assert round_budget(True, 8, 3) == 7 and round_budget(False, 20, 5) == 11
    assert [byzantine_count(n) for n in (4, 8, 16)] == [1, 2, 3]
    assert all(3 * byzantine_count(n) < n for n in range(4, 101))


def test_diameter_matches_networkx_on_random_graphs() -> None:
    """The hand-written BFS diameter against networkx's, on many random connected graphs
    (sparse, dense, trees, paths) and on the generator's own graphs."""
    import random

    rng = random.Random(7)
    checked = 0
    while checked < 150:
        n = rng.randint(1, 40)
        g = nx.gnp_random_graph(n, rng.choice([0.05, 0.1, 0.3, 0.8]), seed=rng.randrange(10**6))
        if rng.random() < 0.2:
            g = nx.random_labeled_tree(n, seed=rng.randrange(10**6)) if n > 1 else g
        edges = sorted((min(u, v), max(u, v)) for u, v in g.edges)
        graph = AgentGraph("test", [f"a{i}" for i in range(n)], edges)
        if nx.is_connected(g):
            assert graph.diameter() == nx.diameter(g)
            checked += 1
        else:
            with pytest.raises(ValueError, match="disconnected"):
                graph.diameter()
    for model in ("ws", "ba", "dt"):
        for seed in range(3):
            graph = generate_graph(model, 30 + 17 * seed, seed)
            assert graph.diameter() == nx.diameter(graph.nx())
