"""A CooperBench run as a timeline (the paper's Figures 8-13, drawn from the events): one lane
per agent, seconds since the run's first event on x, each tool call a mark coloured by tool,
each message an arrow from its sender's lane to every receiver's, plans and finishes marked,
and the start of execution (phase 2) as a dashed line. PNG (200 dpi) and PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from masgrid.families.cooper.figures import save

TOOLS = ("view", "create_file", "str_replace", "insert", "bash")


def pick_runs(runs: pd.DataFrame, limit: int = 2) -> list[str]:
    """Coop runs worth drawing: the first failed and the first successful ones (by run id)."""
    if runs.empty or "cooper_setting" not in runs.columns:
        return []
    coop = runs[runs["cooper_setting"] == "coop"].sort_values("run_id")
    picked = [frame["run_id"].iloc[0] for _, frame in coop.groupby(coop["success"].fillna(False).astype(bool))
              if not frame.empty]
    return picked[:limit]


def timeline_figure(events: pd.DataFrame, run: pd.Series, path: str | Path) -> list[Path]:
    """Draw the run `run` (a `runs` row) from its events; ValueError when it has none."""
    ev = events[events["run_id"] == run["run_id"]] if not events.empty else events
    ev = ev[ev["t"].notna()] if "t" in ev.columns else ev.iloc[0:0]
    if ev.empty:
        raise ValueError(f"run {run['run_id']} has no timed events")
    ev = ev.sort_values(["t", "seq"] if "seq" in ev.columns else ["t"])
    t0 = float(ev["t"].min())
    x = ev["t"].astype(float) - t0
    agents = sorted(int(a) for a in ev["agent"].dropna().unique())
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.9 * len(agents)))
    actions = ev[(ev["kind"] == "action") & ~ev["tool"].isin(("send_message", "finish"))]
    for i, tool in enumerate(sorted(set(actions["tool"].dropna()), key=lambda s: (s not in TOOLS, s))):
        mine = actions[actions["tool"] == tool]
        ax.scatter(x[mine.index], mine["agent"].astype(int) + 1, marker="|", s=120, color=f"C{i}", label=tool)
    for _, msg in ev[ev["kind"] == "message"].iterrows():
        peers = msg.get("peers")
        receivers = [int(p) for p in peers] if isinstance(peers, (list, np.ndarray)) else []
        start = x[msg.name]
        for receiver in receivers:
            ax.annotate("", xy=(start, receiver + 1), xytext=(start, int(msg["agent"]) + 1),
                        arrowprops={"arrowstyle": "->", "color": "grey", "lw": 0.8})
        ax.scatter([start], [int(msg["agent"]) + 1], marker="o", s=25, color="black")
    for kind, marker, label in (("plan", "D", "plan written"), ("finish", "*", "finish")):
        done = ev[ev["kind"] == kind]
        if not done.empty:
            ax.scatter(x[done.index], done["agent"].astype(int) + 1, marker=marker, s=70, color="crimson"
                       if kind == "finish" else "navy", label=label, zorder=3)
    if "phase" in ev.columns and (ev["phase"] == 2).any():
        ax.axvline(x[ev[ev["phase"] == 2].index].min(), color="grey", ls="--", lw=0.8, label="execution starts")
    ax.scatter([], [], marker="o", color="black", label="message (arrow: to)")
    ax.set_yticks([a + 1 for a in agents], [f"agent {a + 1}" for a in agents])
    ax.set_ylim(0.4, len(agents) + 0.6)
    ax.set_xlabel("seconds since the run's first event")
    outcome = (f"success={run.get('success')}, merge={run.get('merge_stage')}, "
               f"naive conflicts={run.get('conflicts_naive')}")
    ax.set_title(f"{run.get('task')} features {run.get('cooper_features')} ({run.get('cooper_setting')}, "
                 f"{run.get('model')}): {outcome}", fontsize="small")
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return save(fig, path, f"run {run['run_id']}; {len(ev)} events")
