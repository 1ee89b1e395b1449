"""An AgentsNet run's graph for the run page: positions, each agent's final answer, and the
edges that break the task's rule.

The graph is not stored with the results; it is regenerated from the run's configuration
(`config_json`) with the task's own generator, which is deterministic in (graph model, N,
seed), so it is the graph the agents had. Positions come from networkx's spring layout with
a fixed seed, computed at build time (the page only draws). Violations are drawn on the
honest agents' subgraph, as the score is computed (Byzantine agents are not scored):
- coloring: an edge whose two ends gave the same group ("same colour");
- vertex cover: an edge neither of whose ends said "Yes" ("uncovered");
- matching: an agent that named a neighbour who did not name it back ("not returned"), and
  an edge between two agents that both said "None" ("both unmatched");
- consensus: an edge whose ends answered differently ("disagree");
- leader election has no edge rule: the page states how many agents said "Yes" (one wanted).
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
import pandas as pd

from masgrid.sdk.results import Run
from masgrid.sdk.tasks import get_task


def regenerate(config: dict[str, Any]) -> tuple[list[str], list[tuple[int, int]], list[int]]:
    """(names, edges, Byzantine agents) of the run's instance, from its recorded config."""
    task = get_task(config["task"])
    kwargs: dict[str, Any] = {"graph": config.get("graph")}  # recorded at the top before it moved into the block
    kwargs.update({key: config.get(key) for key in task.generation_keys})
    kwargs.update(config.get(task.family) or {})
    k = config.get("k")  # null in the config: the task's default_k, as the platform resolves it
    instance = task.generate(config["agents"], task.default_k if k is None else k, config["seed"], **kwargs)
    names = list(instance.meta["names"])
    index = {name: i for i, name in enumerate(names)}
    edges = [(index[u], index[v]) for u, v in instance.meta["edges"]]
    return names, edges, [int(b) for b in instance.meta.get("byzantine_agents", [])]


def _answer(value: object) -> str | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    try:
        parsed = json.loads(str(value))
    except ValueError:
        return str(value)
    return parsed if isinstance(parsed, str) else json.dumps(parsed)


def violations(problem: str, names: list[str], edges: list[tuple[int, int]], answers: list[str | None],
               byzantine: set[int]) -> list[dict[str, Any]]:
    """Edges breaking the task's rule: {"u", "v", "why"} (directed u -> v for "not returned")."""
    honest = [i not in byzantine for i in range(len(names))]
    kept = [(u, v) for u, v in edges if honest[u] and honest[v]]
    out: list[dict[str, Any]] = []
    if problem == "coloring":
        out = [{"u": u, "v": v, "why": "same colour"} for u, v in kept
               if answers[u] is not None and answers[u] == answers[v]]
    elif problem == "vertex_cover":
        out = [{"u": u, "v": v, "why": "uncovered"} for u, v in kept if answers[u] != "Yes" and answers[v] != "Yes"]
    elif problem == "consensus":
        out = [{"u": u, "v": v, "why": "disagree"} for u, v in kept if answers[u] != answers[v]]
    elif problem == "matching":
        index = {name: i for i, name in enumerate(names)}
        neighbours = {frozenset(e) for e in kept}
        for u, answer in enumerate(answers):
            partner = index.get(answer) if answer is not None else None
            if honest[u] and partner is not None and frozenset((u, partner)) in neighbours \
                    and answers[partner] != names[u]:
                out.append({"u": u, "v": partner, "why": "not returned"})
        out += [{"u": u, "v": v, "why": "both unmatched"} for u, v in kept
                if answers[u] == "None" and answers[v] == "None"]
    return out


def graph_view(run: Run, agents: pd.DataFrame) -> dict[str, Any]:
    """The page's graph data: nodes with position, name, answer, correct, Byzantine; edges; violations."""
    config = json.loads(run["config_json"])
    names, edges, byzantine = regenerate(config)
    g = nx.Graph()
    g.add_nodes_from(range(len(names)))
    g.add_edges_from(edges)
    pos = nx.spring_layout(g, seed=0)
    by_agent = agents.set_index("agent") if not agents.empty else agents
    answers: list[str | None] = []
    nodes = []
    for i, name in enumerate(names):
        row = by_agent.loc[i] if i in by_agent.index else None
        answer = _answer(row["submission"]) if row is not None else None
        correct = None if row is None or pd.isna(row["correct"]) else bool(row["correct"])
        answers.append(answer)
        nodes.append({"id": i, "name": name, "x": float(pos[i][0]), "y": float(pos[i][1]), "answer": answer,
                      "correct": correct, "byzantine": i in byzantine})
    problem = str(run["task"]).split("/", 1)[1]
    note = None
    if problem == "leader_election":
        leaders = sum(a == "Yes" for i, a in enumerate(answers) if i not in byzantine)
        note = f"{leaders} honest agent(s) said Yes; exactly one leader is wanted"
    return {"problem": problem, "nodes": nodes, "edges": [list(e) for e in edges],
            "violations": violations(problem, names, edges, answers, set(byzantine)), "note": note}


def panel(run: Run, agents: pd.DataFrame, events: pd.DataFrame, scoring: pd.DataFrame | None = None) -> dict[str, Any]:
    """The run page's AgentsNet panel (site_panel.js draws it); its node names label the flows."""
    try:
        graph = graph_view(run, agents)
    except (ValueError, KeyError) as exc:  # e.g. a config this code cannot regenerate
        return {"kind": "agentsnet", "error": f"graph not drawn: {exc}"}
    return {"kind": "agentsnet", "graph": graph, "agent_names": [node["name"] for node in graph["nodes"]]}
