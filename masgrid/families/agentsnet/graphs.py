"""Seeded communication graphs of AgentsNet (section 3.2, appendix D).

Three models: connected Watts-Strogatz small-world graphs (k = 4, p = 0.4), Barabasi-Albert
preferential attachment (m = 2) and the Delaunay triangulation of points drawn uniformly
from the unit square. Every node is an agent with a distinct human first name.

Choices where the paper is silent (also in docs/agentsnet.md):
- one `numpy.random.Generator` seeded from (seed, model, n) drives the graph and the
  names, so the same arguments give the same graph on every machine;
- nodes are numbered 0..n-1 in generator order; agent i is node i;
- names come from masgrid/families/agentsnet/conf/data/first_names.txt (240 names); larger graphs additionally use
  hyphenated double names ("Ada-Linus"), still distinct and still human-looking.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where graphs are built: `masgrid run` of another task never loads them
    import networkx as nx
    import numpy as np

from masgrid.sdk.resources import conf_cached, read_text
from masgrid.sdk.topology import diameter, neighbor_lists

GRAPH_MODELS: dict[str, str] = {"ws": "small-world (Watts-Strogatz)", "ba": "scale-free (Barabasi-Albert)",
                                "dt": "geometric (Delaunay triangulation)"}
MIN_AGENTS = 4
WS_K, WS_P, BA_M = 4, 0.4, 2


@dataclass(frozen=True)
class AgentGraph:
    """An undirected connected graph with one distinct name per node."""

    model: str
    names: list[str]
    edges: list[tuple[int, int]]  # u < v, sorted

    @property
    def n(self) -> int:
        return len(self.names)

    def nx(self) -> nx.Graph:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(self.edges)
        return g

    def neighbors(self) -> list[list[int]]:
        return neighbor_lists(self.n, self.edges)

    def degrees(self) -> list[int]:
        return [len(a) for a in self.neighbors()]

    def diameter(self) -> int:
        """The longest shortest path (envs/topology.py: a breadth-first search from every node over
        plain adjacency lists, a third of networkx.diameter's time). A disconnected graph has none."""
        longest = diameter(self.neighbors())
        if longest is None:
            raise ValueError(f"the {self.model} graph is disconnected: no diameter")
        return longest


@conf_cached(maxsize=1)
def first_names() -> tuple[str, ...]:
    lines = read_text("data/first_names.txt").splitlines()
    names = tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    if len(set(names)) != len(names):
        raise ValueError("masgrid/families/agentsnet/conf/data/first_names.txt has duplicate names")
    return names


@conf_cached(maxsize=1)
def _name_pool() -> frozenset[str]:
    return frozenset(first_names())


def is_agent_name(name: str) -> bool:
    """Whether the generator can give an agent this name: a pool name or a hyphenated pair
    of two different pool names (the reference parser mode accepts exactly these keys)."""
    pool = _name_pool()
    if name in pool:
        return True
    first, sep, second = name.partition("-")
    return bool(sep) and first != second and first in pool and second in pool


def graph_rng(model: str, n: int, seed: int) -> np.random.Generator:
    import numpy as np

    digest = hashlib.sha256(f"agentsnet:{model}:{n}:{seed}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def sample_names(n: int, rng: np.random.Generator) -> list[str]:
    base = list(first_names())
    pool = base
    if n > len(base):
        extra = n - len(base)
        pairs = [f"{a}-{b}" for a, b in itertools.permutations(base, 2)]
        picks = rng.choice(len(pairs), size=extra, replace=False)
        pool = base + [pairs[int(i)] for i in picks]
    order = rng.permutation(len(pool))[:n]
    return [pool[int(i)] for i in order]


def _ws(n: int, rng: np.random.Generator) -> nx.Graph:
    import networkx as nx

    # networkx retries the rewiring until the graph is connected (`connected_watts_strogatz`).
    return nx.connected_watts_strogatz_graph(n, min(WS_K, n), WS_P, tries=1000, seed=int(rng.integers(2**31)))


def _ba(n: int, rng: np.random.Generator) -> nx.Graph:
    import networkx as nx

    return nx.barabasi_albert_graph(n, BA_M, seed=int(rng.integers(2**31)))


def _dt(n: int, rng: np.random.Generator) -> nx.Graph:
    import networkx as nx
    from scipy.spatial import Delaunay

    points = rng.random((n, 2))
    tri = Delaunay(points)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for simplex in tri.simplices:
        a, b, c = (int(x) for x in simplex)
        g.add_edges_from([(a, b), (b, c), (a, c)])
    return g


_BUILDERS = {"ws": _ws, "ba": _ba, "dt": _dt}


def generate_graph(model: str, n: int, seed: int) -> AgentGraph:
    """The graph of model `model` on `n` named agents for `seed` (deterministic)."""
    if model not in _BUILDERS:
        raise ValueError(f"graph: unknown graph model {model!r}; choose one of {sorted(_BUILDERS)}")
    if n < MIN_AGENTS:
        raise ValueError(f"agents: AgentsNet graphs need at least {MIN_AGENTS} agents, got {n}")
    import networkx as nx

    rng = graph_rng(model, n, seed)
    g = _BUILDERS[model](n, rng)
    if g.number_of_nodes() != n or not nx.is_connected(g):
        raise ValueError(f"graph: generator {model} produced a disconnected graph for n={n}, seed={seed}")
    edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
    return AgentGraph(model=model, names=sample_names(n, rng), edges=edges)
