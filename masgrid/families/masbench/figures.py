"""Figures fit for a paper: MAS-Bench Figure 2, and how every report figure is written.

Conventions (docs/report.md): the Okabe-Ito palette (distinguishable with the common colour
vision deficiencies) for every figure the analysis draws; axis labels with units; rate axes
fixed to 0-100 %; each point is a mean over runs with an error bar of ±1 standard error
(sample SD / sqrt(n)) and its n written next to it; a caption under the panels says what was
averaged over and what the bars are. Each figure is written as PNG at 200 dpi and as PDF
(vector) with the same stem.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on clusters and CI
import matplotlib.pyplot as plt
import pandas as pd

from masgrid.families.masbench.tables import completed, for_task
from masgrid.sdk.figures import save_figure
from masgrid.sdk.intervals import mean_se

#: (runs column, scale, panel title, y label, rate axis)
PANELS = (("sr", 100.0, "(a) success rate", "SR (% of agents correct)", True),
          ("rounds", 1.0, "(b) rounds", "R (model calls per agent, max)", False),
          ("te", 1.0, "(c) token efficiency", "TE (elements per 10^5 tokens)", False),
          ("cr", 100.0, "(d) communication ratio", "CR (% of tokens)", True))


def figure2_figure(runs: pd.DataFrame, task: str | None = "sorting", note: str | None = None,
                   condition: str | None = "base") -> tuple[plt.Figure, str]:
    """The four-panel scaling figure of one condition and its caption (not yet written)."""
    ok = completed(for_task(runs, task, condition))
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    ns = sorted(ok["agents"].dropna().unique())
    for ax, (col, scale, title, ylabel, rate) in zip(axes, PANELS):
        stats = mean_se(ok, ["model", "agents"], col, scale) if col in ok.columns else pd.DataFrame()
        for model, frame in (stats.groupby("model") if not stats.empty else []):
            frame = frame.sort_values("agents")
            ax.errorbar(frame["agents"], frame["mean"], yerr=frame["se"].fillna(0), marker="o", capsize=3,
                        label=str(model))
            for x, y, n in zip(frame["agents"], frame["mean"], frame["n"]):
                ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=6)
        ax.set_title(title)
        ax.set_xlabel("agents N")
        ax.set_ylabel(ylabel)
        if ns:
            ax.set_xticks(ns)
        if rate:
            ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize="small", title="model")
    what = f"condition {condition}" if condition else "all conditions pooled"
    caption = (f"Task {task or 'all'}, {what}. Each point: mean over n runs (n written next to it) of the per-run "
               "metric, K, input families and protocols pooled; error bars: ±1 standard error over runs "
               "(none where n = 1).")
    if note:
        caption += " " + note
    return fig, caption


def figure2(runs: pd.DataFrame, path: str | Path, task: str | None = "sorting", note: str | None = None,
            condition: str | None = "base") -> Path:
    """Write the four-panel scaling figure of one condition (Base unless asked) to `path` (+ PDF)."""
    fig, caption = figure2_figure(runs, task, note, condition)
    return save_figure(fig, path, caption)
