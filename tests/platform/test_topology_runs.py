"""Scripted sweeps over communication graphs, end to end on Ray (docs/topology.md).

A `-m`-style grid over topology.kind (composed through Hydra overrides as `masgrid run -m`
composes them) of a SILO task and MAS-Bench sorting, on p2p and broadcast. Each recorded
row is checked against computations written here: the edges against networkx, the degrees
against those edges, every message's receivers against the sender's neighbours, the
no-communication floor against each agent answering from its own values, and the report's
Topology table against the runs.
"""

from __future__ import annotations

import json

import networkx as nx
import pandas as pd
import pytest

import masgrid
from masgrid._private.envs.tasks import get_task

KINDS = ["complete", "ring", "star"]


def reference(kind: str, n: int) -> nx.Graph:
    return {"complete": nx.complete_graph, "ring": nx.cycle_graph, "star": lambda m: nx.star_graph(m - 1)}[kind](n)


def sorting_floor(inputs: list[list[int]], k: int) -> bool:
    """Every agent submits its own values sorted: right only if they are its block of the union."""
    union = sorted(v for x in inputs for v in x)
    return all(sorted(x) == union[i * k:(i + 1) * k] for i, x in enumerate(inputs))


@pytest.fixture(scope="module")
def results(tmp_path_factory, ray_session):
    out = tmp_path_factory.mktemp("topology")
    axes = {"topology__kind": KINDS, "protocol": ["p2p", "broadcast"], "seed": [0]}
    configs = [*masgrid.grid(["task=sorting", "agents=6", "k=2", "mode=random", f"results_dir={out}"], **axes),
               *masgrid.grid(["task=silo/I-01", "agents=5", f"results_dir={out}"], **axes)]
    assert {c.topology.kind for c in configs} == set(KINDS) and len(configs) == 12
    # AgentsNet on its own model and on a ring (vice versa: its graph is the topology)
    agentsnet = [*masgrid.grid(["task=agentsnet/coloring", "agents=6", "graph=ws", f"results_dir={out}"]),
                 *masgrid.grid(["task=agentsnet/coloring", "agents=6", "graph=null", "topology.kind=ring",
                                f"results_dir={out}"])]
    outcome = masgrid.sweep([*configs, *agentsnet])
    assert outcome.ok == 14 and outcome.failed == 0
    return out, configs


def test_every_row_records_its_graph_and_the_classical_policy_solves_it(results):
    out, configs = results
    runs = pd.read_parquet(out / "runs")
    agents = pd.read_parquet(out / "agents")
    runs = runs[~runs["task"].str.startswith("agentsnet/")]
    assert len(runs) == 12 and runs["success"].all()
    by_id = {c.run_id: c for c in configs}
    for _, run in runs.iterrows():
        cfg = by_id[run["run_id"]]
        n = int(run["agents"])
        want = reference(run["topology"], n)
        assert run["topology"] == cfg.topology.kind
        edges = None if pd.isna(run["topology_edges"]) else json.loads(run["topology_edges"])
        if run["topology"] == "complete":
            assert edges is None
        else:
            assert edges == sorted([min(u, v), max(u, v)] for u, v in want.edges())
        assert run["topology_n_edges"] == want.number_of_edges()
        assert run["topology_diameter"] == nx.diameter(want) and run["topology_connected"]
        degrees = dict(want.degree())
        assert (run["topology_min_degree"], run["topology_max_degree"]) == (min(degrees.values()),
                                                                         max(degrees.values()))
        mine = agents[agents["run_id"] == run["run_id"]].set_index("agent")["degree"].to_dict()
        assert mine == degrees


def test_messages_reach_only_neighbours(results):
    out, configs = results
    runs = pd.read_parquet(out / "runs").set_index("run_id")
    events = pd.read_parquet(out / "events", columns=["run_id", "agent", "kind", "verb", "ok", "peers"])
    sends = events[(events["kind"] == "command") & events["verb"].isin(["send_message", "broadcast_message"])]
    assert len(sends) > 0
    for _, row in sends.iterrows():
        want = reference(runs.loc[row["run_id"], "topology"], int(runs.loc[row["run_id"], "agents"]))
        assert set(row["peers"]) <= set(want.neighbors(int(row["agent"])))
    # the relaying policy never addresses a non-neighbour: no send was refused
    assert sends["ok"].all()


def test_no_communication_floor_is_recorded_per_run(results):
    out, configs = results
    runs = pd.read_parquet(out / "runs").set_index("run_id")
    for cfg in configs:
        row = runs.loc[cfg.run_id]
        instance = get_task(cfg.task).generate(cfg.agents, cfg.k_resolved, cfg.seed, **cfg.generation_kwargs())
        if cfg.task == "sorting":
            assert row["comm_floor_success"] == sorting_floor(instance.inputs, cfg.k_resolved)
        else:  # SILO's own floor column, computed by its family code
            assert row["comm_floor_success"] == row["floor_success"]


def test_agentsnet_rows_describe_the_graph_its_agents_used(results):
    out, _ = results
    runs = pd.read_parquet(out / "runs")
    runs = runs[runs["task"] == "agentsnet/coloring"].set_index("graph", drop=False)
    own = runs[runs["topology"].isna()].iloc[0]
    assert own["graph"] == "ws" and own["topology_diameter"] == own["diameter"]
    assert own["topology_n_edges"] == own["edges"] and own["topology_max_degree"] == own["max_degree"]
    ring = runs[runs["topology"] == "ring"].iloc[0]
    assert pd.isna(ring["graph"]) and json.loads(ring["topology_edges"]) == sorted(
        [min(u, v), max(u, v)] for u, v in nx.cycle_graph(6).edges())
    assert ring["diameter"] == 3 and ring["success"]


def test_report_topology_section_matches_the_runs(results):
    out, _ = results
    masgrid.report(out)
    index = (out / "report" / "README.md").read_text()
    assert "## Topology" in index and (out / "report" / "topology" / "success_by_topology.png").stat().st_size > 0
    table = pd.read_csv(out / "report" / "topology" / "success_by_topology.csv")
    runs = pd.read_parquet(out / "runs")
    labels = table[table["task"] == "agentsnet/coloring"]["topology"].tolist()
    assert sorted(labels) == ["graph=ws", "ring"]
    table = table[table["task"] != "agentsnet/coloring"]
    for _, row in table.iterrows():
        cell = runs[(runs["task"] == row["task"]) & (runs["protocol"] == row["protocol"])
                    & (runs["topology"] == row["topology"])]
        assert row["runs"] == len(cell) == 1
        assert row["success %"] == pytest.approx(cell["success"].mean() * 100)
        assert row["floor %"] == pytest.approx(cell["comm_floor_success"].astype(float).mean() * 100)
        assert row["diameter"] == pytest.approx(cell["topology_diameter"].mean())
    assert len(table) == 2 * 2 * 3
