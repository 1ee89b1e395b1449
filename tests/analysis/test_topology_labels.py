"""The topology table's graph label: the topology kind, or for a run on its task's own graph
(topology null) its family's top-level options, e.g. AgentsNet's `graph=ws`."""

from __future__ import annotations

import random

import pandas as pd

from masgrid._private.analysis.topology import graph_label


def expected(row: dict) -> str:
    if row["topology"] is not None:
        return row["topology"]
    if row["task"].startswith("agentsnet/") and row["graph"] is not None:
        return f"graph={row['graph']}"
    return "complete"  # recorded before topologies existed


def test_labels_on_random_rows():
    rng = random.Random(7)
    rows = []
    for _ in range(200):
        task = rng.choice(["agentsnet/coloring", "sorting", "silo/I-01"])
        rows.append({"task": task, "topology": rng.choice([None, "ring", "complete", "star"]),
                     "graph": rng.choice([None, "ws", "ba"]), "mode": rng.choice([None, "asc", "random"])})
    runs = pd.DataFrame(rows)
    assert graph_label(runs).tolist() == [expected(r) for r in rows]
    assert {"graph=ws", "graph=ba", "ring", "complete"} <= set(graph_label(runs))
