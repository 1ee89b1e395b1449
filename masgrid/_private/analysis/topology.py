"""The report's Topology section: success against communication graph per task (docs/topology.md).

It appears only when the results hold runs on a restricted graph (`topology` other than
complete). One row per (task, protocol, topology): runs, the success rate with its 95%
Wilson interval, the graph's mean diameter and degree, and the no-communication floor of the
same runs (`comm_floor_success`: every agent answering from its own input alone, scored on
each run's own instance) beside it, so a reader sees what the graph added over silence.
Tasks that never ran on a restricted graph are left out; a run on its task's own graph
(AgentsNet's `graph=ws`, topology null) is labelled `graph=<model>`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from masgrid._private.analysis.dispersion import wilson
from masgrid._private.analysis.markdown import write_table
from masgrid._private.envs.tasks import get_task
from masgrid._private.envs.topology import KINDS
from masgrid.family import family_of

COLUMNS = ["runs", "success %", "CI low %", "CI high %", "floor %", "floor runs", "success - floor (pp)",
           "diameter", "mean degree", "rounds", "messages"]


def has_restricted(runs: pd.DataFrame) -> bool:
    return "topology" in runs and bool((runs["topology"].notna() & (runs["topology"] != "complete")).any())


def graph_label(runs: pd.DataFrame) -> pd.Series:
    """The topology kind; for a run on its task's own graph (topology null) its family's
    top-level options that are set, e.g. `graph=ws` (AgentsNet's graph model); `complete` for
    rows recorded before topology existed."""
    label = runs["topology"].astype(object).copy()
    for index in label.index[label.isna()]:
        task = str(runs.at[index, "task"])
        if not _builds_own_graph(task):  # null topology on any other task: recorded before topologies
            continue
        family = family_of(task)
        parts = [f"{key}={runs.at[index, key]}" for key in (family.top_level if family is not None else ())
                 if key in runs and pd.notna(runs.at[index, key])]
        if parts:
            label[index] = " ".join(parts)
    return label.fillna("complete")


def _builds_own_graph(task: str) -> bool:
    """Whether the task's generator builds its own graph (`Task.topology_need` "builds")."""
    try:
        return get_task(task).topology_need == "builds"
    except (KeyError, ValueError):  # a task no installed family provides
        return False


def topology_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Success against topology per task and protocol (module docstring); runs without a
    success value (unscored) are left out of the rate and its interval."""
    restricted = runs["topology"].notna() & (runs["topology"] != "complete")
    tasks = runs.loc[restricted, "task"].unique()
    runs = runs.assign(topology=graph_label(runs))
    runs = runs[runs["task"].isin(tasks)]
    rows = []
    for (task, protocol, kind), group in runs.groupby(["task", "protocol", "topology"], sort=False):
        scored = group["success"].dropna().astype(bool)
        low, high = wilson(int(scored.sum()), len(scored))
        floor = group["comm_floor_success"].dropna().astype(bool) if "comm_floor_success" in group else pd.Series()
        rate = scored.mean() * 100 if len(scored) else math.nan
        floor_rate = floor.mean() * 100 if len(floor) else math.nan
        rows.append({"task": task, "protocol": protocol, "topology": kind, "runs": len(scored),
                     "success %": rate, "CI low %": low * 100, "CI high %": high * 100, "floor %": floor_rate,
                     "floor runs": len(floor), "success - floor (pp)": rate - floor_rate,
                     "diameter": _mean(group, "topology_diameter"), "mean degree": _mean(group, "topology_mean_degree"),
                     "rounds": _mean(group, "rounds"), "messages": _mean(group, "messages_sent")})
    if not rows:
        return pd.DataFrame(columns=["task", "protocol", "topology", *COLUMNS]).set_index(["task", "protocol", "topology"])
    table = pd.DataFrame(rows)
    table["order"] = table["topology"].map({k: i for i, k in enumerate(KINDS)}).fillna(len(KINDS))
    table = table.sort_values(["task", "protocol", "order"]).drop(columns="order")
    return table.set_index(["task", "protocol", "topology"])[COLUMNS]


def _mean(group: pd.DataFrame, column: str) -> float:
    return float(group[column].dropna().astype(float).mean()) if column in group else math.nan


def topology_figure(table: pd.DataFrame, path: Path) -> Path:
    """One column of panels per task. Top: success (bars, 95% Wilson interval) per topology and
    protocol, the no-communication floor as a red tick on each bar. Bottom: mean rounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flat = table.reset_index()
    tasks = list(dict.fromkeys(flat["task"]))
    fig, axes = plt.subplots(2, len(tasks), figsize=(max(4.5, 3.8 * len(tasks)), 5.6), squeeze=False,
                             sharex="col", gridspec_kw={"height_ratios": [3, 2]})
    for col, task in enumerate(tasks):
        top, bottom = axes[0][col], axes[1][col]
        sub = flat[flat["task"] == task]
        kinds = list(dict.fromkeys(sub["topology"]))
        protocols = list(dict.fromkeys(sub["protocol"]))
        width = 0.8 / len(protocols)
        for j, protocol in enumerate(protocols):
            rows = sub[sub["protocol"] == protocol].set_index("topology").reindex(kinds)
            xs = [i - 0.4 + width * (j + 0.5) for i in range(len(kinds))]
            rate = rows["success %"].to_numpy(dtype=float)
            err = [rate - rows["CI low %"].to_numpy(dtype=float), rows["CI high %"].to_numpy(dtype=float) - rate]
            top.bar(xs, rate, width * 0.9, yerr=err, capsize=2, label=protocol, color=f"C{j}")
            top.hlines(rows["floor %"].to_numpy(dtype=float), [x - width * 0.45 for x in xs],
                       [x + width * 0.45 for x in xs], colors="#d62728", linewidth=2.5, zorder=3,
                       label="no-communication floor" if j == 0 else None)
            bottom.bar(xs, rows["rounds"].to_numpy(dtype=float), width * 0.9, color=f"C{j}")
        top.set_ylim(-2, 105)
        top.set_title(task, fontsize=9)
        bottom.set_xticks(range(len(kinds)), kinds, rotation=30, ha="right", fontsize=8)
        if col == 0:
            top.set_ylabel("success %")
            bottom.set_ylabel("mean rounds")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def write_topology_section(runs: pd.DataFrame, out: Path) -> tuple[list[Path], list[str]]:
    """Table (Markdown + CSV) and figure under out/topology/, and the index lines; nothing when
    no run used a restricted graph."""
    if not has_restricted(runs):
        return [], []
    table = topology_table(runs)
    note = ("Success rate per task, protocol and communication graph, with its 95% Wilson interval; `floor %`: "
            "the no-communication floor (every agent answering from its own input alone) on the same runs' "
            "instances, `-` where the task defines none. `diameter`, `mean degree`, `rounds` and `messages` (sent) "
            "are means over the runs (random kinds draw one graph per run seed).")
    written = write_table(table, out / "topology", "success_by_topology", "Success against topology", note)
    figure = topology_figure(table, out / "topology" / "success_by_topology.png")
    lines = ["## Topology", "", "[Success against topology per task, with the no-communication floor]"
             "(topology/success_by_topology.md)", "", "![success against topology](topology/success_by_topology.png)",
             ""]
    return [*written, figure], lines
