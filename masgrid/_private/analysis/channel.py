"""The report's "Channel" section: success against the loss rate of an unreliable channel.

Present only when the results hold runs with a channel (docs/channel.md, "Report"). A point
is one (task, protocol, model, agents, loss rate): the runs whose other channel rates are 0
and that have no per-link rates, so the curve isolates loss. Loss 0 is the runs without a
channel from the same (task, protocol, model, agents) groups. Each point gives the success
rate (share of runs with `success` true, runs whose `success` is null left out) with its 95%
Wilson interval, the mean of the family's headline metric, and the share of channel messages
actually lost beside the configured rate.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only
import matplotlib.pyplot as plt
import pandas as pd

from masgrid._private.analysis.dispersion import wilson
from masgrid._private.analysis.markdown import write_table
from masgrid._private.analysis.usable_runs import exclusion_note, usable
from masgrid.family import family_of

GROUP = ["task", "protocol", "model", "agents"]
OTHER_RATES = ("channel_delay", "channel_duplicate", "channel_reorder")
COLUMNS = [*GROUP, "loss", "runs", "successes", "success_rate", "ci_low", "ci_high", "headline", "headline_mean",
           "messages", "lost_share"]
#: colour-blind-safe qualitative palette (Okabe & Ito 2008), as the families' figures use
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


def has_channel_runs(runs: pd.DataFrame) -> bool:
    return "channel_loss" in runs.columns and bool(runs["channel_loss"].notna().any())


def loss_points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, protocol, model, agents, loss) as the module docstring says."""
    runs = usable(runs)
    if runs.empty or not has_channel_runs(runs):
        return pd.DataFrame(columns=COLUMNS)
    on = runs["channel_loss"].notna()
    only_loss = on & runs[list(OTHER_RATES)].fillna(0).eq(0).all(axis=1) & runs["channel_links"].isna()
    with_channel = runs[only_loss]
    groups = set(with_channel[GROUP].astype(str).itertuples(index=False, name=None))
    baseline = runs[~on & runs[GROUP].astype(str).apply(tuple, axis=1).isin(groups)]
    data = pd.concat([with_channel, baseline.assign(channel_loss=0.0)])
    rows = []
    for key, part in data.groupby([*GROUP, "channel_loss"], sort=True, dropna=False):
        scored = part["success"].dropna().astype(bool)
        k, n = int(scored.sum()), len(scored)
        low, high = wilson(k, n)
        headline = _headline(str(key[0]))
        values = pd.to_numeric(part[headline], errors="coerce") if headline in part else pd.Series(dtype=float)
        counted = pd.to_numeric(part["channel_sent"], errors="coerce")
        sent = counted.sum()
        lost = pd.to_numeric(part["channel_lost"], errors="coerce").sum()
        rows.append({**dict(zip(GROUP, key[:-1])), "loss": float(key[-1]), "runs": len(part), "successes": k,
                     "success_rate": k / n if n else math.nan, "ci_low": low, "ci_high": high,
                     "headline": headline, "headline_mean": float(values.mean()) if values.notna().any() else math.nan,
                     "messages": int(sent) if counted.notna().any() else None,
                     "lost_share": lost / sent if sent else math.nan})
    return pd.DataFrame(rows, columns=COLUMNS)


def _headline(task: str) -> str:
    family = family_of(task)
    return "sr" if family is None else family.headline


def write_channel_section(runs: pd.DataFrame, out: Path) -> tuple[list[Path], list[str]]:
    """The table and figure (when there are channel runs) and the report index's lines."""
    if not has_channel_runs(runs):
        return [], []
    points = loss_points(runs)
    note = (f"Runs: {exclusion_note(runs)} Points: runs whose only channel rate is `loss` (no per-link rates); "
            "loss 0: the runs without a channel of the same task, protocol, model and agents. success_rate: share "
            "of runs solved (null `success` left out), 95% Wilson interval; headline_mean: mean of the family's "
            "headline metric; lost_share: channel messages lost / sent (docs/channel.md).")
    written = write_table(points, out, "channel", "Success against message loss", note)
    figure = _figure(points, out / "channel_success.png")
    written += [figure, figure.with_suffix(".pdf")]
    lines = ["## Channel", "", "[Success against message loss, per protocol](channel.md) "
             "([figure](channel_success.png))", ""]
    return written, lines


def _figure(points: pd.DataFrame, path: Path) -> Path:
    tasks = sorted(points["task"].astype(str).unique()) or ["(none)"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        mine = points[points["task"].astype(str) == task]
        lines = list(mine.groupby(["protocol", "model", "agents"], sort=True))
        # lines side by side by a little: protocols seeded alike lose the same links and can coincide
        dodge = 0.012 * max(float(mine["loss"].max()) * 100, 1.0)
        for k, (key, line) in enumerate(lines):
            line = line.sort_values("loss")
            x = line["loss"] * 100 + (k - (len(lines) - 1) / 2) * dodge
            y = line["success_rate"] * 100
            err = [y - line["ci_low"] * 100, line["ci_high"] * 100 - y]
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, color=PALETTE[k % len(PALETTE)],
                        label=f"{key[0]} ({key[1]}, N={key[2]})")
            if points["runs"].nunique() > 1:  # else the caption says n
                for xx, yy, n in zip(x, y, line["runs"]):
                    ax.annotate(f"n={n}", (xx, yy), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_title(task)
        ax.set_xlabel("message loss rate (%)")
        ax.set_ylabel("runs solved (%)")
        ax.set_ylim(-5, 105)
        ax.legend(fontsize=7)
    runs = sorted(points["runs"].unique())
    n = f"n = {runs[0]} runs per point" if len(runs) == 1 else "n: runs per point"
    caption = textwrap.wrap(f"Bars: 95% Wilson interval over runs; {n}; lines offset slightly along x so that "
                            "equal points stay visible.", width=int(4.2 * len(tasks) * 16))
    fig.text(0.01, 0.01, "\n".join(caption), fontsize=8)
    fig.tight_layout(rect=(0, min(0.4, (len(caption) * 11 + 8) / (72 * 3.6)), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=200)
    fig.savefig(path.with_suffix(".pdf"))
    plt.close(fig)
    return path
