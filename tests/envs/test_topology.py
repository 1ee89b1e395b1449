"""The communication graph (`topology`): generators, statistics, protocol restriction, config.

Every recorded graph is compared with an independent call of the generator under the seed
rule docs/topology.md states; statistics are recomputed with networkx.
"""

from __future__ import annotations

import hashlib
import json
import random

import networkx as nx
import numpy as np
import pytest
from scipy.spatial import Delaunay

from masgrid._private.envs.protocols import make_protocol
from masgrid._private.envs.tasks import Instance, get_task
from masgrid._private.envs.topology import TopologySettings, run_edges, summary, system_prompt
from masgrid._private.platform.run.config import ConfigError, RunConfig

SEEDS = range(12)


def documented_seed(run_seed: int) -> int:
    """docs/topology.md: the first four bytes, little-endian, of sha256("masgrid-topology:<seed>")."""
    return int.from_bytes(hashlib.sha256(f"masgrid-topology:{run_seed}".encode()).digest()[:4], "little")


def expected_graph(kind: str, n: int, run_seed: int) -> nx.Graph:
    """The graph docs/topology.md promises, built here without masgrid's code."""
    s = documented_seed(run_seed)
    if kind == "ring":
        return nx.cycle_graph(n)
    if kind == "star":
        return nx.star_graph(n - 1)
    if kind == "tree":
        return nx.full_rary_tree(2, n)
    if kind == "grid":
        rows = max(r for r in range(1, n + 1) if n % r == 0 and r * r <= n)
        g = nx.grid_2d_graph(rows, n // rows)
        return nx.relabel_nodes(g, {(r, c): r * (n // rows) + c for r, c in g.nodes})
    if kind == "watts_strogatz":
        return nx.connected_watts_strogatz_graph(n, 4, 0.4, tries=100, seed=s)
    if kind == "barabasi_albert":
        return nx.barabasi_albert_graph(n, 2, seed=s)
    assert kind == "delaunay"
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for a, b, c in Delaunay(np.random.default_rng(s).random((n, 2))).simplices:
        g.add_edges_from([(int(a), int(b)), (int(b), int(c)), (int(a), int(c))])
    return g


def edge_set(g: nx.Graph) -> list[list[int]]:
    return sorted([min(u, v), max(u, v)] for u, v in g.edges())


def config(**data) -> RunConfig:
    return RunConfig.from_mapping({"task": "sorting", "protocol": "p2p", **data})


@pytest.mark.parametrize("kind", ["ring", "star", "tree", "grid", "watts_strogatz", "barabasi_albert", "delaunay"])
def test_recorded_graph_is_the_documented_generator_output(kind):
    rng = random.Random(kind)
    for seed in SEEDS:
        n = rng.randint(5, 30)
        run_seed = rng.randint(-(2**40), 2**40)
        cfg = config(agents=n, seed=run_seed, topology={"kind": kind})
        want = expected_graph(kind, n, run_seed)
        row = summary(cfg.topology, n, run_seed)
        assert json.loads(row["topology_edges"]) == edge_set(want), (kind, n, run_seed)
        assert edge_set(cfg.communication_graph()) == edge_set(want)
        # the instance's neighbour lists are the same graph
        assert cfg.instance().neighbors == [sorted(want.neighbors(i)) for i in range(n)]
        degrees = [d for _, d in want.degree()]
        assert row["topology_n_edges"] == want.number_of_edges()
        assert row["topology_connected"] == nx.is_connected(want)
        assert row["topology_diameter"] == (nx.diameter(want) if nx.is_connected(want) else None)
        assert (row["topology_min_degree"], row["topology_max_degree"]) == (min(degrees), max(degrees))
        assert row["topology_mean_degree"] == pytest.approx(sum(degrees) / n)
        random_kind = kind in ("watts_strogatz", "barabasi_albert", "delaunay")
        assert row["topology_seed"] == (documented_seed(run_seed) if random_kind else None)


def test_a_fixed_topology_seed_gives_one_graph_for_every_run_seed():
    graphs = {json.dumps(summary(TopologySettings(kind="barabasi_albert", seed=7, m=3), 20, s)["topology_edges"])
              for s in range(5)}
    assert graphs == {json.dumps(json.dumps(edge_set(nx.barabasi_albert_graph(20, 3, seed=7))))}


def test_edge_list_file_and_a_disconnected_graph(tmp_path):
    rng = random.Random(3)
    for case in range(10):
        n = rng.randint(4, 15)
        pairs = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(1, 2 * n))}
        path = tmp_path / f"g{case}.txt"
        path.write_text("# an edge list\n" + "".join(f"{u} {v}  # e\n" if i % 2 else f"{v}\t{u}\n"
                                                     for i, (u, v) in enumerate(sorted(pairs))) + "\n")
        settings = TopologySettings(kind="file", path=str(path))
        row = summary(settings, n, 0)
        want = nx.Graph()
        want.add_nodes_from(range(n))
        want.add_edges_from(pairs)
        assert json.loads(row["topology_edges"]) == edge_set(want)
        assert row["topology_connected"] == nx.is_connected(want)
        assert row["topology_diameter"] == (nx.diameter(want) if nx.is_connected(want) else None)


def test_complete_graph_statistics_without_building_it():
    for n in (1, 2, 7, 50_000):
        row = summary(TopologySettings(), n, 0)
        assert row["topology_edges"] is None and row["topology_n_edges"] == n * (n - 1) // 2
        assert row["topology_diameter"] == (1 if n > 1 else 0) and row["topology_connected"]
        assert row["topology_min_degree"] == row["topology_max_degree"] == n - 1
    small = nx.complete_graph(7)
    assert summary(TopologySettings(), 7, 0)["topology_diameter"] == nx.diameter(small)


def ring_instance(n: int) -> Instance:
    return Instance(task="sorting", params={}, inputs=[[0]] * n, expected=[[0]] * n,
                    neighbors=[sorted({(i - 1) % n, (i + 1) % n}) for i in range(n)])


def test_p2p_refuses_a_send_to_a_non_neighbour():
    protocol = make_protocol("p2p", 6, lambda agent, raw: raw)
    protocol.attach(ring_instance(6))
    (refused,) = protocol.apply_reply(0, "```\nsend_message 3 hello\n```", None)
    assert not refused.ok and refused.messages_sent == 0
    assert refused.reply == "send_message -> error: Agent-3 is not your neighbour; you can send only to: Agent-1, Agent-5"
    assert protocol.rows == []
    (sent,) = protocol.apply_reply(0, "```\nsend_message 5 hello\n```", None)
    assert sent.ok and sent.deliveries == 1 and [(r.sender, r.receiver) for r in protocol.rows] == [(0, 5)]


def test_broadcast_reaches_only_neighbours_and_complete_reaches_all():
    protocol = make_protocol("broadcast", 6, lambda agent, raw: raw)
    protocol.attach(ring_instance(6))
    (out,) = protocol.apply_reply(2, "```\nbroadcast_message hi\n```", None)
    assert out.reply == "delivered (Agent-1, Agent-3)" and out.deliveries == 2
    full = make_protocol("broadcast", 6, lambda agent, raw: raw)
    full.attach(Instance(task="sorting", params={}, inputs=[[0]] * 6, expected=[[0]] * 6))
    (out,) = full.apply_reply(2, "```\nbroadcast_message hi\n```", None)
    assert out.deliveries == 5


def test_neighbours_are_told_only_on_a_restricted_graph():
    for protocol, reach in (("p2p", "send_message accepts only these agents as receivers."),
                            ("broadcast", "broadcast_message reaches only these agents.")):
        star = config(agents=6, protocol=protocol, topology={"kind": "star"})
        task, instance = get_task("sorting"), star.instance()
        centre = system_prompt(task, task.view(instance, 0), protocol, "base")  # agent 0: the centre
        leaf = system_prompt(task, task.view(instance, 4), protocol, "base")
        assert centre.endswith("you are linked to 5 of the 5 other agents: Agent-1, Agent-2, Agent-3, Agent-4, "
                               f"Agent-5. {reach} Data from any other agent reaches you only if the agents between "
                               "you pass it on.")
        assert "you are linked to 1 of the 5 other agents: Agent-0." in leaf
        complete = config(agents=6, protocol=protocol)
        plain = task.build_prompt(task.view(complete.instance(), 0), protocol, "base")
        assert system_prompt(task, task.view(complete.instance(), 0), protocol, "base") == plain


# run ids of default configs, computed before `topology` existed (main at 593fb82)
BEFORE = {("sorting", 5, "broadcast", 0): "81f20f3ca0551d4f", ("sorting", 6, "p2p", 3): "1a8d7c469f278859",
          ("silo/I-01", 4, "p2p", 0): "b093b0e882d3cd14", ("max", 3, "kv", 0): "e7a869adf661e035"}


def test_default_and_explicit_complete_keep_every_run_id():
    for (task, agents, protocol, seed), run_id in BEFORE.items():
        data = {"task": task, "agents": agents, "protocol": protocol, "seed": seed}
        assert RunConfig.from_mapping(data).run_id == run_id
        # complete ignores the other kinds' parameters: still the same run
        explicit = RunConfig.from_mapping({**data, "topology": {"kind": "complete", "k": 6, "seed": 3}})
        assert explicit.run_id == run_id
    agentsnet = RunConfig.from_mapping({"task": "agentsnet/coloring", "agents": 8, "graph": "ws"})
    assert agentsnet.run_id == "1ff403aaf3aaf45e"


def test_restricted_graph_enters_the_identity_with_its_own_parameters_only():
    ring = config(agents=6, topology={"kind": "ring"})
    assert ring.identity()["topology"] == {"kind": "ring"}
    assert ring.run_id != config(agents=6).run_id
    assert config(agents=6, topology={"kind": "ring", "m": 3}).run_id == ring.run_id  # m is not a ring's
    ws = config(agents=8, topology={"kind": "watts_strogatz"})
    assert ws.identity()["topology"] == {"kind": "watts_strogatz", "k": 4, "p": 0.4, "seed": None}
    assert config(agents=8, topology={"kind": "watts_strogatz", "k": 4, "p": 0.4}).run_id == ws.run_id


def test_an_edited_edge_file_is_a_new_run(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n2 3\n")
    first = config(agents=4, topology={"kind": "file", "path": str(path)}).run_id
    path.write_text("0 1\n1 2\n2 3\n0 3\n")
    assert config(agents=4, topology={"kind": "file", "path": str(path)}).run_id != first


@pytest.mark.parametrize(("data", "line"), [
    ({"topology": {"kind": "hexagon"}}, "topology.kind: Input should be"),
    ({"topology": {"kind": "ring"}, "agents": 2}, "topology.kind: a ring needs at least 3 agents, got 2"),
    ({"topology": {"kind": "watts_strogatz", "k": 6}, "agents": 6}, "topology.k: watts_strogatz needs k < agents"),
    ({"topology": {"kind": "barabasi_albert", "m": 5}, "agents": 5}, "topology.m: barabasi_albert needs m < agents"),
    ({"topology": {"kind": "grid", "rows": 4}, "agents": 6}, "topology.rows: 4 rows do not divide agents = 6"),
    ({"topology": {"kind": "file"}}, "topology: kind=file needs topology.path, the edge-list file"),
    ({"topology": {"kind": "file", "path": "/nonexistent/g.txt"}}, "topology.path: cannot read /nonexistent/g.txt"),
    ({"topology": {"kind": "ring", "p": 2}}, "topology.p: Input should be less than or equal to 1"),
    ({"topology": {"kind": "ring"}, "protocol": "kv"}, "topology.kind: protocol kv has no graph to restrict"),
    ({"topology": {"kind": "ring"}, "agents": 10, "max_rounds": 11},
     "max_rounds: the scripted relay policy needs max_rounds >= 2 x diameter + 2 = 12"),
    ({"topology": {"kind": "ring"}, "task": "relay/sum"},
     "topology.kind: task relay/sum runs only on the complete graph"),
    ({"topology": {"kind": "ring"}, "task": "agentsnet/coloring", "protocol": None, "graph": "ws"},
     "graph: AgentsNet runs on its own graph model (graph=ws) or on the communication graph (topology.kind), not both"),
    ({"task": "agentsnet/coloring", "protocol": None}, "graph: AgentsNet needs a graph model (or a restricted "
                                                       "topology.kind)"),
])
def test_invalid_topologies_are_one_line_before_ray(data, line):
    with pytest.raises(ConfigError) as err:
        config(**data)
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and lines[0] == "invalid configuration:", str(err.value)
    assert lines[1].strip().startswith(line), lines[1]


def test_bad_edge_lines_and_a_disconnected_graph_are_refused(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n1 9\n")
    with pytest.raises(ConfigError, match=r"line 2: edge 1 9 is not between two distinct agents 0\.\.3"):
        config(agents=4, topology={"kind": "file", "path": str(bad)})
    split = tmp_path / "split.txt"
    split.write_text("0 1\n2 3\n")
    with pytest.raises(ConfigError, match="task sorting needs a connected graph; this file graph on 4 agents is not"):
        config(agents=4, topology={"kind": "file", "path": str(split)})


def test_agentsnet_builds_its_instance_on_the_communication_graph():
    for kind in ("ring", "star", "grid", "barabasi_albert"):
        for seed in range(4):
            cfg = RunConfig.from_mapping({"task": "agentsnet/coloring", "agents": 9, "seed": seed, "graph": None,
                                          "topology": {"kind": kind}})
            instance = cfg.instance()
            index = {name: i for i, name in enumerate(instance.meta["names"])}
            edges = sorted([min(index[u], index[v]), max(index[u], index[v])] for u, v in instance.meta["edges"])
            assert edges == edge_set(expected_graph(kind, 9, seed))
            assert instance.params["graph"] == kind
            assert instance.meta["diameter"] == nx.diameter(expected_graph(kind, 9, seed))
            assert edge_set(cfg.communication_graph(instance)) == edges
            assert cfg.columns()["topology"] == kind


def test_agentsnet_on_its_own_model_reports_that_graph():
    """graph=ws: the communication graph is AgentsNet's own (its meta edges), topology null."""
    for seed in range(4):
        cfg = RunConfig.from_mapping({"task": "agentsnet/consensus", "agents": 10, "seed": seed, "graph": "ws"})
        instance = cfg.instance()
        index = {name: i for i, name in enumerate(instance.meta["names"])}
        want = nx.Graph([(index[u], index[v]) for u, v in instance.meta["edges"]])
        assert edge_set(cfg.communication_graph(instance)) == edge_set(want)
        row = summary(cfg.topology, 10, seed, run_edges(cfg.topology, seed, get_task(cfg.task), instance))
        assert json.loads(row["topology_edges"]) == edge_set(want)
        assert row["topology_diameter"] == nx.diameter(want) == instance.meta["diameter"]
        assert row["topology_seed"] is None and cfg.columns()["topology"] is None
    assert edge_set(config(agents=5).communication_graph()) == edge_set(nx.complete_graph(5))


def test_a_moved_edge_file_is_the_same_run(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "g.txt").write_text("0 1\n1 2\n2 3\n")
    ids = {config(agents=4, topology={"kind": "file", "path": str(tmp_path / f / "g.txt")}).run_id for f in "ab"}
    assert len(ids) == 1


def test_masgrid_instance_shows_the_neighbour_lists(capsys):
    from masgrid._private.platform.commands.task_cli import instance_command

    assert instance_command(["sorting", "agents=4", "topology.kind=star"]) == 0
    assert json.loads(capsys.readouterr().out)["neighbors"] == [[1, 2, 3], [0], [0], [0]]
    assert instance_command(["sorting", "agents=4"]) == 0
    assert json.loads(capsys.readouterr().out)["neighbors"] is None
