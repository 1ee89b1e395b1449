"""SIMAS figures (matplotlib PNG): the inverted U per subject (Figures 2-5, 8-12), accuracy
against tokens (Figure 3), CoT against SIMAS (Figure 6) and the judge's win rates and
scores on generation questions (Figures 7, 13c-d). Error bars are the population
standard deviation across repeats; every panel states its runs per point."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from masgrid.analysis.figures import save_figure  # noqa: E402
from masgrid.analysis.simas import accuracy_table, cot_comparison, judge_table  # noqa: E402


def _panels(count: int) -> tuple[plt.Figure, list[plt.Axes]]:
    cols = min(3, max(1, count))
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def inverted_u(runs: pd.DataFrame, path: str | Path, condition: str = "base", note: str | None = None) -> Path:
    """Accuracy (%) against n, one panel per task/subject, one line per model, with error bars."""
    table = accuracy_table(runs).reset_index()
    table = table[table["condition"] == condition]
    groups = list(table.groupby(["task", "subject"], dropna=False))
    fig, axes = _panels(max(1, len(groups)))
    for ax, ((task, subject), group) in zip(axes, groups):
        for model, g in group.groupby("model"):
            g = g.sort_values("agents")
            ax.errorbar(g["agents"], g["accuracy"], yerr=g["std"], marker="o", capsize=3, label=str(model))
        reps = int(group["repeats"].min()), int(group["questions"].min())
        ax.set_title(f"{subject} ({task})\n{reps[0]} repeats x {reps[1]} questions per point", fontsize="small")
        ax.set_xlabel("agents n")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(-5, 105)
        ax.legend(fontsize="x-small")
    if not groups:
        axes[0].text(0.5, 0.5, "no SIMAS runs", ha="center")
    caption = ("Each point: accuracy over the cell's questions, mean over repeats; error bars: ±1 population standard "
               "deviation over repeats (the spread the accuracy table reports), not a standard error.")
    return save_figure(fig, path, f"{caption} {note}" if note else caption)


def accuracy_vs_tokens(runs: pd.DataFrame, path: str | Path, note: str | None = None) -> Path:
    """Figure 3: mean accuracy against mean tokens per question, each point an n (labelled)."""
    table = accuracy_table(runs).reset_index()
    table = table[table["condition"] == "base"]
    fig, (ax,) = _panels(1)
    for model, g in table.groupby("model"):
        g = g.groupby("agents").agg(accuracy=("accuracy", "mean"), tokens=("tokens_per_question", "mean"))
        ax.plot(g["tokens"], g["accuracy"], marker="o", label=str(model))
        for n, row in g.iterrows():
            ax.annotate(f"n={n}", (row["tokens"], row["accuracy"]), fontsize="x-small")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per question (prompt + completion, log)")
    ax.set_ylabel("accuracy (%), mean over subjects")
    ax.legend(fontsize="x-small")
    caption = "Each point: one n, accuracy and tokens per question averaged over subjects (no error bars)."
    return save_figure(fig, path, f"{caption} {note}" if note else caption)


def cot_vs_simas(runs: pd.DataFrame, path: str | Path, note: str | None = None) -> Path:
    """Figure 6: per model and task, CoT's accuracy next to SIMAS's at each n."""
    table = cot_comparison(runs)
    fig, (ax,) = _panels(1)
    if not table.empty:
        table.plot.bar(ax=ax, rot=20)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("CoT against SIMAS", fontsize="small")
    return save_figure(fig, path, note)


def judge_bars(judgments: pd.DataFrame, path: str | Path, note: str | None = None) -> Path:
    """Figures 7, 13c-d: per model, task and n, win rates (SIMAS, CoT, tie; % of judged
    pairs) and the mean score totals, with the judged pairs in each label."""
    table = judge_table(judgments).reset_index()
    fig, (left, right) = _panels(2)
    if table.empty:
        left.text(0.5, 0.5, "no judgments", ha="center")
        return save_figure(fig, path, note)
    labels = [f"{r.model}\n{r.task} T={r.discussion_rounds} n={r.agents}\n({r.judged} judged)" for r in table.itertuples()]
    rates = pd.DataFrame({"SIMAS": table["simas_win_rate"], "CoT": table["cot_win_rate"],
                          "tie": 100.0 * table["ties"] / table["judged"].where(table["judged"] > 0)}).set_axis(labels)
    rates.plot.bar(ax=left, rot=0)
    left.set_ylabel("win rate (% of judged pairs)")
    left.set_title("judge verdicts (both orders must agree)", fontsize="small")
    table[["simas_score", "cot_score"]].set_axis(labels).rename(columns={"simas_score": "SIMAS", "cot_score": "CoT"}
                                                              ).plot.bar(ax=right, rot=0)
    right.set_ylabel("mean score (sum over criteria)")
    right.set_title("average score", fontsize="small")
    for ax in (left, right):
        ax.tick_params(axis="x", labelsize="x-small")
    return save_figure(fig, path, note)
