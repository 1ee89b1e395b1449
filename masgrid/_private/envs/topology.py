"""The communication graph of a run (`topology:` in the run config, docs/topology.md).

Agent i is node i. `complete` (the default) is every earlier run's behaviour: every agent
reaches every other and nothing about the graph changes a prompt or a protocol. Any other
kind restricts the graph-aware protocols (p2p sends and broadcast fan-out) to the edges.

Generators (networkx unless said otherwise), on n = agents nodes:
- ring: cycle_graph(n); star: star_graph(n - 1), agent 0 the centre;
- tree: full_rary_tree(branching, n), agent 0 the root, nodes numbered breadth first;
- grid: grid_2d_graph(rows, n / rows), node (r, c) is agent r * cols + c;
- watts_strogatz: connected_watts_strogatz_graph(n, k, p, tries=100, seed=s);
- barabasi_albert: barabasi_albert_graph(n, m, seed=s);
- delaunay: the Delaunay triangulation (scipy) of n points drawn by
  numpy.random.default_rng(s).random((n, 2)) in the unit square;
- file: the edge list at `path`, one "u v" pair of agent ids per line (# starts a comment).

Seed rule: s = `topology.seed` when set (the same graph for every run seed), else
`derived_seed(run seed)` = the first four bytes, little-endian, of
sha256("masgrid-topology:<run seed>"), so each run seed has its own graph.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    import networkx as nx

    from masgrid._private.envs.tasks.base import AgentView, Instance, Task

KINDS = ("complete", "ring", "star", "tree", "grid", "watts_strogatz", "barabasi_albert", "delaunay", "file")
TopologyKind = Literal["complete", "ring", "star", "tree", "grid", "watts_strogatz", "barabasi_albert", "delaunay",
                       "file"]
#: each kind's own parameters with their defaults (the other parameters are ignored for it)
PARAMETERS: dict[str, dict[str, Any]] = {
    "complete": {}, "ring": {}, "star": {}, "tree": {"branching": 2}, "grid": {"rows": None},
    "watts_strogatz": {"k": 4, "p": 0.4, "seed": None}, "barabasi_albert": {"m": 2, "seed": None},
    "delaunay": {"seed": None}, "file": {"path": None}}
#: the most agents a restricted graph may have (its diameter is computed for every run)
MAX_AGENTS = 2000
WS_TRIES = 100


class TopologySettings(BaseModel):
    """`topology:` of the run config (docs/topology.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: TopologyKind = Field("complete", description="the communication graph; complete: every agent reaches "
                                                       "every other (every earlier run)")
    k: int | None = Field(None, ge=2, description="watts_strogatz: each node's neighbours in the ring lattice (4)")
    p: float | None = Field(None, ge=0, le=1, description="watts_strogatz: rewiring probability (0.4)")
    m: int | None = Field(None, ge=1, description="barabasi_albert: edges from each new node (2)")
    branching: int | None = Field(None, ge=1, description="tree: children per node (2)")
    rows: int | None = Field(None, ge=1, description="grid: rows (null: the largest divisor of agents <= its "
                                                      "square root)")
    path: str | None = Field(None, description="file: edge list, one 'u v' pair of agent ids per line")
    seed: int | None = Field(None, ge=0, lt=2**32, description="random kinds: generator seed; null: derived from "
                                                               "the run seed (a different graph per run seed)")

    @model_validator(mode="after")
    def _path_for_file(self) -> TopologySettings:
        if self.kind == "file" and not self.path:
            raise ValueError("kind=file needs topology.path, the edge-list file")
        return self

    @property
    def restricted(self) -> bool:
        return self.kind != "complete"

    def resolved(self) -> dict[str, Any]:
        """The kind and its own parameters, defaults filled in; other parameters are dropped."""
        out: dict[str, Any] = {"kind": self.kind}
        for key, default in PARAMETERS[self.kind].items():
            value = getattr(self, key)
            out[key] = default if value is None else value
        return out

    def identity(self) -> dict[str, Any] | None:
        """What enters a run's identity: None for complete (every earlier run id stays), else the
        resolved parameters; for a file the sha256 of its content instead of its path (an edited
        file is a new graph, a moved one is not)."""
        if not self.restricted:
            return None
        if self.kind == "file":  # the content, not where it lies
            return {"kind": "file", "file_sha256": hashlib.sha256(_read_file(str(self.path))).hexdigest()}
        return self.resolved()


def derived_seed(run_seed: int) -> int:
    """The generator seed of a random kind when `topology.seed` is null (module docstring)."""
    return int.from_bytes(hashlib.sha256(f"masgrid-topology:{run_seed}".encode()).digest()[:4], "little")


def generator_seed(settings: TopologySettings, run_seed: int) -> int:
    return settings.seed if settings.seed is not None else derived_seed(run_seed)


def _read_file(path: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ValueError(f"topology.path: cannot read {path}: {exc.strerror or exc}") from None


def grid_rows(n: int, rows: int | None) -> int:
    if rows is None:
        return max(r for r in range(1, int(n ** 0.5) + 1) if n % r == 0)
    if n % rows:
        raise ValueError(f"topology.rows: {rows} rows do not divide agents = {n}")
    return rows


def _check(settings: TopologySettings, n: int) -> None:
    """One line naming the parameter when the kind cannot give a graph on n agents."""
    kind, params = settings.kind, settings.resolved()
    if kind != "complete" and n > MAX_AGENTS:
        raise ValueError(f"topology.kind: {kind} graphs are limited to {MAX_AGENTS} agents, got {n}")
    if kind == "ring" and n < 3:
        raise ValueError(f"topology.kind: a ring needs at least 3 agents, got {n}")
    if kind == "delaunay" and n < 3:
        raise ValueError(f"topology.kind: a Delaunay triangulation needs at least 3 agents, got {n}")
    if kind == "watts_strogatz" and not params["k"] < n:
        raise ValueError(f"topology.k: watts_strogatz needs k < agents = {n}, got {params['k']}")
    if kind == "barabasi_albert" and not params["m"] < n:
        raise ValueError(f"topology.m: barabasi_albert needs m < agents = {n}, got {params['m']}")
    if kind == "grid":
        grid_rows(n, params["rows"])


def _parse_edges(text: str, n: int, path: str) -> list[tuple[int, int]]:
    edges = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        try:
            u, v = (int(x) for x in line[:2]) if len(line) >= 2 else (None, None)
        except ValueError:
            u = v = None
        if u is None or v is None:
            raise ValueError(f"topology.path: {path} line {no}: expected two agent ids 'u v', got {raw.strip()!r}")
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise ValueError(f"topology.path: {path} line {no}: edge {u} {v} is not between two distinct agents "
                             f"0..{n - 1}")
        edges.append((u, v))
    return edges


def _generate(settings: TopologySettings, n: int, run_seed: int) -> nx.Graph:
    import networkx as nx

    _check(settings, n)
    kind, params = settings.kind, settings.resolved()
    seed = generator_seed(settings, run_seed)
    if kind == "complete":
        return nx.complete_graph(n)
    if kind == "ring":
        return nx.cycle_graph(n)
    if kind == "star":
        return nx.star_graph(n - 1)
    if kind == "tree":
        return nx.full_rary_tree(params["branching"], n)
    if kind == "grid":
        rows = grid_rows(n, params["rows"])
        g = nx.grid_2d_graph(rows, n // rows)
        return nx.relabel_nodes(g, {(r, c): r * (n // rows) + c for r, c in g.nodes})
    if kind == "watts_strogatz":
        try:
            return nx.connected_watts_strogatz_graph(n, params["k"], params["p"], tries=WS_TRIES, seed=seed)
        except nx.NetworkXError:
            raise ValueError(f"topology.p: no connected watts_strogatz graph in {WS_TRIES} tries (n={n}, "
                             f"k={params['k']}, p={params['p']}, seed={seed})") from None
    if kind == "barabasi_albert":
        return nx.barabasi_albert_graph(n, params["m"], seed=seed)
    if kind == "delaunay":
        return _delaunay(n, seed)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(_parse_edges(_read_file(str(settings.path)).decode("utf-8", errors="replace"), n,
                                  str(settings.path)))
    return g


def _delaunay(n: int, seed: int) -> nx.Graph:
    import networkx as nx
    import numpy as np
    from scipy.spatial import Delaunay

    g = nx.Graph()
    g.add_nodes_from(range(n))
    for simplex in Delaunay(np.random.default_rng(seed).random((n, 2))).simplices:
        a, b, c = (int(x) for x in simplex)
        g.add_edges_from([(a, b), (b, c), (a, c)])
    return g


@functools.lru_cache(maxsize=64)
def _cached(settings_json: str, file_sha: str | None, n: int, run_seed: int) -> tuple[tuple[int, int], ...]:
    settings = TopologySettings.model_validate_json(settings_json)
    g = _generate(settings, n, run_seed)
    return tuple(sorted((min(u, v), max(u, v)) for u, v in g.edges()))


def communication_graph(settings: TopologySettings, run_seed: int, task: Task, instance: Instance) -> nx.Graph:
    """The run's communication graph: nodes 0..n-1 (agent ids), an edge where two agents can
    message each other directly: the restricted topology, else the task's own graph (AgentsNet's
    model), else the complete graph. Deterministic in (settings, run seed, instance)."""
    import networkx as nx

    edges = run_edges(settings, run_seed, task, instance)
    if edges is None:
        return nx.complete_graph(instance.n_agents)
    g = nx.Graph()
    g.add_nodes_from(range(instance.n_agents))
    g.add_edges_from(edges)
    return g


def restricted_edges(settings: TopologySettings, n_agents: int, run_seed: int) -> list[tuple[int, int]]:
    """The sorted (u < v) edges of a restricted graph (cached per process)."""
    file_sha = hashlib.sha256(_read_file(str(settings.path))).hexdigest() if settings.kind == "file" else None
    return list(_cached(settings.model_dump_json(), file_sha, n_agents, run_seed))


def neighbor_lists(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    adj: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    return [sorted(a) for a in adj]


def distances(adj: list[list[int]], source: int) -> list[int]:
    """Hops from `source` to every node by breadth-first search (-1: unreachable)."""
    dist = [-1] * len(adj)
    dist[source] = 0
    frontier = [source]
    while frontier:
        nxt = []
        for u in frontier:
            for v in adj[u]:
                if dist[v] < 0:
                    dist[v] = dist[u] + 1
                    nxt.append(v)
        frontier = nxt
    return dist


def diameter(adj: list[list[int]]) -> int | None:
    """The longest shortest path, by a breadth-first search from every node; None when disconnected."""
    longest = 0
    for source in range(len(adj)):
        dist = distances(adj, source)
        if min(dist) < 0:
            return None
        longest = max(longest, max(dist))
    return longest


def run_edges(settings: TopologySettings, run_seed: int, task: Task, instance: Instance) -> list[tuple[int, int]] | None:
    """The sorted edges of the graph a run's agents communicate over: the restricted topology's,
    else the task's own graph (`Task.graph_edges`, e.g. AgentsNet's model); None: complete."""
    if settings.restricted:
        return restricted_edges(settings, instance.n_agents, run_seed)
    own = task.graph_edges(instance)
    return None if own is None else sorted((min(u, v), max(u, v)) for u, v in own)


def summary(settings: TopologySettings, n_agents: int, run_seed: int,
            own_edges: list[tuple[int, int]] | None = None) -> dict[str, Any]:
    """The runs-table columns of a run's graph (docs/results.md): the restricted topology's, else
    the task's own graph (`own_edges`), else the complete graph's, computed from n alone (no
    edge list: it is never built)."""
    n = n_agents
    edges = restricted_edges(settings, n, run_seed) if settings.restricted else own_edges
    if edges is None:
        return {"topology_edges": None, "topology_n_edges": n * (n - 1) // 2,
                "topology_diameter": 1 if n > 1 else 0, "topology_min_degree": n - 1,
                "topology_mean_degree": float(n - 1), "topology_max_degree": n - 1, "topology_connected": True,
                "topology_seed": None}
    adj = neighbor_lists(n, edges)
    degrees = [len(a) for a in adj]
    longest = diameter(adj)
    random_kind = settings.restricted and "seed" in PARAMETERS[settings.kind]
    return {"topology_edges": json.dumps([list(e) for e in edges]),
            "topology_n_edges": len(edges), "topology_diameter": longest, "topology_min_degree": min(degrees),
            "topology_mean_degree": sum(degrees) / n, "topology_max_degree": max(degrees),
            "topology_connected": longest is not None,
            "topology_seed": generator_seed(settings, run_seed) if random_kind else None}


def with_topology(instance: Instance, settings: TopologySettings, run_seed: int) -> Instance:
    """`instance` with its agents' neighbour lists when the graph is restricted; unchanged (the
    same object) on the complete graph."""
    if not settings.restricted:
        return instance
    adj = neighbor_lists(instance.n_agents, restricted_edges(settings, instance.n_agents, run_seed))
    return instance.model_copy(update={"neighbors": adj})


#: what an agent on a restricted graph is told after its system prompt (never on the complete graph)
NEIGHBOR_NOTE = ("\n\nCommunication graph: you are linked to {count} of the {others} other agents: {names}. "
                 "{reach} Data from any other agent reaches you only if the agents between you pass it on.")
_REACH = {"p2p": "send_message accepts only these agents as receivers.",
          "broadcast": "broadcast_message reaches only these agents."}


def neighbor_note(view: AgentView, protocol: str) -> str:
    """The text appended to an agent's system prompt on a restricted graph ('' on the complete graph)."""
    if view.neighbors is None:
        return ""
    from masgrid._private.envs.protocols.base import agent_name

    names = ", ".join(agent_name(j) for j in view.neighbors) or "none"
    return NEIGHBOR_NOTE.format(count=len(view.neighbors), others=view.n_agents - 1, names=names,
                                reach=_REACH.get(protocol, ""))


def system_prompt(task: Task, view: AgentView, protocol: str, condition: str) -> str:
    """The agent's system message: the task's prompt, then its neighbours on a restricted graph."""
    return task.build_prompt(view, protocol, condition) + neighbor_note(view, protocol)


#: rounds the scripted relaying policy needs: a share moves one hop per two rounds (a reply's
#: receive is read in the agent's next turn, where it is relayed), plus the first send and a
#: planning round (docs/topology.md)
def flood_rounds(diameter: int) -> int:
    return 2 * diameter + 2


def check_topology(settings: TopologySettings, task: Task, protocol: str, n: int, run_seed: int, max_rounds: int,
                   backend: str, condition: str) -> None:
    """One line (ValueError naming the option) when this run cannot use this restricted graph."""
    from masgrid._private.envs.protocols import get_protocol

    builds = task.topology_need == "builds"  # the task's own substrate is the graph (its generator takes it)
    if not builds and not get_protocol(protocol).graph_aware:
        raise ValueError(f"topology.kind: protocol {protocol} has no graph to restrict (a restricted topology needs "
                         f"p2p or broadcast); use topology.kind=complete")
    if task.topology_need == "complete":
        raise ValueError(f"topology.kind: task {task.name} runs only on the complete graph (Task.topology_need)")
    _check(settings, n)
    graph = summary(settings, n, run_seed)
    if task.topology_need in ("connected", "builds") and not graph["topology_connected"]:
        raise ValueError(f"topology.kind: task {task.name} needs a connected graph; this {settings.kind} graph on "
                         f"{n} agents is not")
    diameter_ = graph["topology_diameter"]
    if not builds and backend == "scripted" and diameter_ is not None and max_rounds < flood_rounds(diameter_):
        raise ValueError(f"max_rounds: the scripted relay policy needs max_rounds >= 2 x diameter + 2 = "
                         f"{flood_rounds(diameter_)} on this {settings.kind} graph, got {max_rounds}")
