"""MAS-Bench Figure 2: SR, R, TE and CR against N, one line per model (matplotlib PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on clusters and CI
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from masgrid.analysis.tables import scaling  # noqa: E402

PANELS = (("SR%", "(a) success rate SR (%)"), ("R", "(b) rounds R"), ("TE", "(c) token efficiency TE"),
          ("CR%", "(d) communication ratio CR (%)"))


def save_figure(fig: "plt.Figure", path: str | Path, note: str | None = None) -> Path:
    """Lay out, write as PNG (parent folders created), close, and return the path. `note`
    (e.g. which runs were left out) is printed under the panels."""
    fig.tight_layout(rect=(0, 0.06, 1, 1) if note else None)
    if note:
        fig.text(0.01, 0.01, note, fontsize="small", ha="left", va="bottom")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figure2(runs: pd.DataFrame, path: str | Path, task: str | None = "sorting", note: str | None = None,
            condition: str | None = "base") -> Path:
    """Write the four-panel scaling figure of one condition (Base unless asked) to `path`."""
    data = scaling(runs, task, condition).reset_index()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for ax, (col, title) in zip(axes, PANELS):
        for model, frame in data.groupby("model"):
            frame = frame.sort_values("agents")
            ax.plot(frame["agents"], frame[col], marker="o", label=str(model))
        ax.set_title(title)
        ax.set_xlabel("agents N")
        ax.set_xticks(sorted(data["agents"].unique()))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"condition: {condition or 'all conditions pooled'}", fontsize="small")
    return save_figure(fig, path, note)
