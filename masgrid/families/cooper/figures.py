"""CooperBench figures from the tables of cooper.py, cooper_difficulty.py and cooper_messages.py:
success by setting (Figure 3 left / 4a), success against relative difficulty (Figure 3 right /
Figure 7), conflict rate with and without communication (Figure 4b), communication share by
message type (Figure 4c) and success against team size (appendix F). Error bars and bands are
95% Wilson intervals; every figure states n. Each is written as PNG (200 dpi) and PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from masgrid.families.cooper.messages import LABELS
from masgrid.sdk.figures import save_figure

#: one colour per setting in every figure
COLORS = {"solo": "C0", "coop": "C1", "nocomm": "C2"}


def _setting_order(setting: str) -> tuple[int, str]:
    return (list(COLORS).index(setting) if setting in COLORS else len(COLORS), setting)


def save(fig: plt.Figure, path: str | Path, note: str | None = None) -> list[Path]:
    """Write `path` as .png (200 dpi) and .pdf beside it, close the figure, return both paths.
    The caption goes through figures.save_figure, which lifts the panels by its wrapped
    height (a fixed margin let long notes cover the axis labels)."""
    png = save_figure(fig, Path(path).with_suffix(".png"), note)
    return [png, png.with_suffix(".pdf")]


def _caption(text: str, note: str | None) -> str:
    """What each mark averages and what its bars are, then the report's note on the runs."""
    return f"{text} {note}" if note else text


def _yerr(table: pd.DataFrame) -> np.ndarray:
    """Asymmetric error bars (percent) from rate and Wilson bounds; 0 where undefined."""
    low = (table["rate"] - table["ci_low"]).fillna(0).clip(lower=0)
    high = (table["ci_high"] - table["rate"]).fillna(0).clip(lower=0)
    return 100 * np.vstack([low.to_numpy(float), high.to_numpy(float)])


def _grouped_bars(ax: plt.Axes, table: pd.DataFrame, groups: list[str], key: str) -> None:
    """Bars of `rate` (%) per model, one per `key` value, with Wilson error bars and n on top."""
    models = sorted(table["model"].astype(str).unique())
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(models))
    for i, group in enumerate(groups):
        sub = table[table[key] == group].set_index("model").reindex(models)
        pos = x + (i - (len(groups) - 1) / 2) * width
        ax.bar(pos, 100 * sub["rate"].fillna(0), width, yerr=_yerr(sub.reset_index()), capsize=3, label=str(group))
        for p, n in zip(pos, sub["n"].fillna(0).astype(int)):
            ax.text(p, 1, f"n={n}", ha="center", va="bottom", fontsize="xx-small", rotation=90)
    ax.set_xticks(x, models, rotation=15, fontsize="small")
    ax.set_ylim(0, 100)
    ax.legend(fontsize="small")


def _rate_bars(table: pd.DataFrame, path: str | Path, settings: list[str], empty: str, ylabel: str, title: str,
               caption: str, note: str | None) -> list[Path]:
    """A rate per model and setting as grouped bars with 95% Wilson intervals (n on each bar)."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * table["model"].nunique() + 2), 4))
    if table.empty:
        ax.text(0.5, 0.5, empty, ha="center")
    else:
        _grouped_bars(ax, table, settings, "setting")
    ax.set_xlabel("model")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="small")
    return save(fig, path, _caption(caption, note))


def success_figure(table: pd.DataFrame, path: str | Path, note: str | None = None) -> list[Path]:
    """Figure 3 (left) / 4a: success rate per model and setting with 95% Wilson intervals."""
    return _rate_bars(table, path, list(dict.fromkeys(table["setting"])), "no CooperBench runs",
                      "task success rate (%)", "Success by setting (95% Wilson intervals)",
                      "Each bar: task success rate over the n runs of a model and setting (n on the bar). "
                      "Error bars: 95% Wilson interval.", note)


def difficulty_figure(curves: pd.DataFrame, path: str | Path, note: str | None = None) -> list[Path]:
    """Figure 7: success rate against rescaled difficulty, one panel per model and the pooled
    one, a line per setting with its Wilson band; the legend gives each curve's n."""
    models = [m for m in curves["model"].unique() if m != "pooled"] + (["pooled"] if not curves.empty else [])
    count = max(1, len(models))
    cols = min(3, count)
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.5 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    if curves.empty:
        flat[0].text(0.5, 0.5, "no difficulty (needs Solo runs)", ha="center")
    for ax, model in zip(flat, models):
        mine = curves[curves["model"] == model]
        for setting in sorted(mine["setting"].unique(), key=_setting_order):
            curve = mine[(mine["setting"] == setting) & (mine["n"] > 0)].sort_values("midpoint")
            color = COLORS.get(setting)
            ax.plot(curve["midpoint"], 100 * curve["rate"], marker="o", ms=3, color=color, clip_on=False,
                    label=f"{setting} (n={int(curve['n'].sum())})")
            ax.fill_between(curve["midpoint"], 100 * curve["ci_low"], 100 * curve["ci_high"], color=color, alpha=0.2)
        ax.set_title(str(model), fontsize="small")
        ax.set_xlabel("relative difficulty d~(t) (bucket midpoint)")
        ax.set_ylabel("success rate (%)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 100)
        ax.legend(fontsize="x-small")
    return save(fig, path, _caption("Each point: success rate of the runs in one difficulty bucket (legend: runs per "
                                    "curve). Band: 95% Wilson interval.", note))


def conflict_figure(table: pd.DataFrame, path: str | Path, note: str | None = None) -> list[Path]:
    """Figure 4b: share of runs with a naive-merge conflict, with and without communication."""
    return _rate_bars(table.replace({"setting": {"coop": "with comm", "nocomm": "no comm"}}), path,
                      ["with comm", "no comm"], "no coop / nocomm runs", "runs with a naive merge conflict (%)",
                      "Conflict rate with and without communication (95% Wilson)",
                      "Each bar: share of the n runs whose naive merge conflicted (n on the bar). "
                      "Error bars: 95% Wilson interval.", note)


def communication_figure(table: pd.DataFrame, path: str | Path, note: str | None = None) -> list[Path]:
    """Figure 4c: messages as % of execution steps per model, stacked by primary label."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(table) + 3), 4))
    if table.empty:
        ax.text(0.5, 0.5, "no coop runs with events", ha="center")
    else:
        bottom = np.zeros(len(table))
        for name in LABELS:
            values = 100 * table[f"{name}_share"].fillna(0).to_numpy(float)
            ax.bar(table["model"], values, 0.5, bottom=bottom, label=name)
            bottom += values
        for i, row in enumerate(table.itertuples()):
            ax.text(i, bottom[i], f"{row.messages}/{row.steps} steps\n{row.runs} runs", ha="center", va="bottom",
                    fontsize="xx-small")
        ax.set_ylim(0, max(5.0, bottom.max() * 1.3))
        ax.legend(fontsize="small", title="message type\n(rule-based)", title_fontsize="x-small",
                  loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_xlabel("model")
    ax.set_ylabel("messages (% of execution steps)")
    ax.set_title("Communication overhead by message type", fontsize="small")
    return save(fig, path, _caption("Each bar: messages as a share of execution steps, pooled over the labelled runs "
                                    "and stacked by type; a ratio of pooled counts, no error bars.", note))


def scaling_figure(table: pd.DataFrame, path: str | Path, note: str | None = None) -> list[Path]:
    """Appendix F: coop success rate against the number of agents, Wilson error bars, n labelled."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    if table.empty:
        ax.text(0.5, 0.5, "no coop runs", ha="center")
    for model, group in table.groupby("model", sort=True):
        group = group[group["n"] > 0].sort_values("agents")
        ax.errorbar(group["agents"], 100 * group["rate"], yerr=_yerr(group), marker="o", capsize=3, label=str(model),
                    clip_on=False)  # markers at 0 or 100 % stay whole on a 0-100 axis
        for a, r, n in zip(group["agents"], group["rate"], group["n"]):
            ax.annotate(f"n={n}", (a, 100 * r), fontsize="xx-small", xytext=(3, 3), textcoords="offset points")
    if not table.empty:
        ax.set_xticks(sorted(table["agents"].unique()))
        ax.legend(fontsize="small")
    ax.set_xlabel("agents in the team (one feature each)")
    ax.set_ylabel("task success rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Scaling beyond two agents (coop, 95% Wilson)", fontsize="small")
    return save(fig, path, _caption("Each point: coop task success rate over n runs (labelled). Error bars: 95% "
                                    "Wilson interval.", note))
