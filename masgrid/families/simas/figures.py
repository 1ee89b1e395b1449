"""SIMAS figures (matplotlib PNG): the inverted U per subject (Figures 2-5, 8-12), accuracy
against tokens (Figure 3), CoT against SIMAS (Figure 6) and the judge's win rates and
scores on generation questions (Figures 7, 13c-d). Error bars are ±1 standard error of the
mean over repeats (sample SD / sqrt(repeats)), not the population SD the accuracy table
also reports; every point carries its repeats x questions and every caption says so."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from masgrid.families.simas.analysis import accuracy_table, judge_table
from masgrid.sdk.figures import save_figure
from masgrid.sdk.intervals import wilson_rate


def _panels(count: int, width: float = 4.2) -> tuple[plt.Figure, list[plt.Axes]]:
    cols = min(3, max(1, count))
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.4 * rows + 0.8), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def _n_label(ax: plt.Axes, x: float, y: float, text: str) -> None:
    ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=6)


def _rate_axis(ax: plt.Axes, label: str) -> None:
    ax.set_ylabel(label)
    ax.set_ylim(0, 100)


def inverted_u(runs: pd.DataFrame, path: str | Path, condition: str = "base", note: str | None = None) -> Path:
    """Accuracy (%) against n, one panel per task/subject, one line per model, ±1 SE bars
    and each point's repeats x questions written next to it."""
    table = accuracy_table(runs).reset_index()
    table = table[table["condition"] == condition]
    groups = list(table.groupby(["task", "subject"], dropna=False))
    fig, axes = _panels(max(1, len(groups)))
    for ax, ((task, subject), group) in zip(axes, groups):
        # one line per model, T and setting: runs of different discussion lengths or settings are
        # different curves, never one (the label names T and the setting only where they vary)
        lines = group.groupby(["model", "discussion_rounds", "setting"], dropna=False)
        several_t, several_s = group["discussion_rounds"].nunique() > 1, group["setting"].nunique() > 1
        for (model, rounds, setting), g in lines:
            g = g.sort_values("agents")
            label = str(model) + (f", T={rounds}" if several_t else "") + (f", {setting}" if several_s else "")
            ax.errorbar(g["agents"], g["accuracy"], yerr=g["se"].fillna(0), marker="o", capsize=3, label=label)
            ax.set_xticks(sorted(group["agents"].unique()))
            for x, y, r, q in zip(g["agents"], g["accuracy"], g["repeats"], g["questions"]):
                _n_label(ax, x, y, f"{int(r)}x{int(q)}")
        ax.set_title(f"{subject} ({task})", fontsize="small")
        ax.set_xlabel("agents n")
        _rate_axis(ax, "accuracy (% of questions)")
        ax.legend(fontsize="x-small")
    if not groups:
        axes[0].text(0.5, 0.5, "no SIMAS runs", ha="center")
    caption = (f"Condition {condition}. Each point: accuracy over a repeat's questions, mean over repeats; "
               "labels RxQ: R repeats x Q questions per repeat (fewest in the cell). Error bars: ±1 standard error "
               "of the mean over repeats (sample SD / sqrt(R); none with R = 1).")
    return save_figure(fig, path, f"{caption} {note}" if note else caption)


def tokens_points(runs: pd.DataFrame) -> pd.DataFrame:
    """Figure 3's points: per model, T, setting and n, accuracy and tokens per question
    averaged over the (task, subject) cells of condition base, the standard error of that
    average of independent cell means (sqrt(sum of the cells' SE^2) / cells; NaN if a cell
    has one repeat), the number of cells and the fewest repeats in them. Runs of different T
    or settings are different points, never averaged together."""
    table = accuracy_table(runs).reset_index()
    table = table[table["condition"] == "base"]
    keys = ["model", "discussion_rounds", "setting", "agents"]
    rows = []
    for key, g in table.groupby(keys, dropna=False):
        rows.append({**dict(zip(keys, key)), "accuracy": g["accuracy"].mean(),
                     "se": float(np.sqrt((g["se"] ** 2).sum(min_count=len(g)))) / len(g),
                     "tokens": g["tokens_per_question"].mean(), "cells": len(g), "repeats": int(g["repeats"].min())})
    return pd.DataFrame(rows, columns=[*keys, "accuracy", "se", "tokens", "cells", "repeats"])


def accuracy_vs_tokens(runs: pd.DataFrame, path: str | Path, note: str | None = None) -> Path:
    """Figure 3: mean accuracy against mean tokens per question, each point an n (labelled)."""
    points = tokens_points(runs)
    fig, (ax,) = _panels(1, width=7.0)
    several_t, several_s = points["discussion_rounds"].nunique() > 1, points["setting"].nunique() > 1
    for (model, rounds, setting), g in points.groupby(["model", "discussion_rounds", "setting"], dropna=False):
        g = g.sort_values("agents")
        label = str(model) + (f", T={rounds}" if several_t else "") + (f", {setting}" if several_s else "")
        ax.errorbar(g["tokens"], g["accuracy"], yerr=g["se"].fillna(0), marker="o", capsize=3, label=label)
        for r in g.itertuples():
            _n_label(ax, r.tokens, r.accuracy, f"n={r.agents} ({r.cells}c, {r.repeats}r)")
    spread = points["tokens"].max() / points["tokens"].min() if len(points) and points["tokens"].min() > 0 else 1
    log = spread > 10  # within a decade a log axis only adds unreadable minor labels
    if log:
        ax.set_xscale("log")
    ax.set_xlabel("tokens per question (prompt + completion" + (", log scale)" if log else ")"))
    _rate_axis(ax, "accuracy (% of questions)")
    ax.legend(fontsize="x-small")
    caption = ("Condition base. Each point: one number of agents n; accuracy (mean over repeats) and tokens per "
               "question averaged over the labelled number of (task, subject) cells c, r = fewest repeats in a cell. "
               "Error bars: ±1 standard error of that average (the cells' SEs over repeats combined; none where a "
               "cell has one repeat); tokens have no bars.")
    return save_figure(fig, path, f"{caption} {note}" if note else caption)


def cot_vs_simas(runs: pd.DataFrame, path: str | Path, note: str | None = None) -> Path:
    """Figure 6: per model, task and subject, CoT's accuracy next to SIMAS's at each n, with
    ±1 SE bars over repeats and the repeats of each bar under the axis."""
    table = accuracy_table(runs).reset_index()
    table = table[table["condition"].isin(["cot", "base"])].copy()
    table["bar"] = [("CoT" if c == "cot" else f"SIMAS n={int(n)}") for c, n in zip(table["condition"], table["agents"])]
    fig, (ax,) = _panels(1, width=7.0)
    has_cot = "CoT" in set(table["bar"])
    if has_cot and not table.empty:
        index = ["model", "task", "subject"]
        keep = table.set_index(index).index.isin(table[table["bar"] == "CoT"].set_index(index).index)
        table = table[keep]  # only (model, task, subject) groups that have a CoT bar to compare with
        order = ["CoT", *sorted({b for b in table["bar"] if b != "CoT"}, key=lambda b: int(b.split("=")[1]))]
        mean = table.pivot_table(index=index, columns="bar", values="accuracy").reindex(columns=order)
        err = table.pivot_table(index=index, columns="bar", values="se", dropna=False).reindex_like(mean).fillna(0)
        reps = table.pivot_table(index=index, columns="bar", values="repeats").reindex_like(mean)
        mean.index = ["\n".join(map(str, i)) for i in mean.index]
        mean.plot.bar(ax=ax, rot=0, yerr=err.to_numpy().T, capsize=2)
        low, high = int(reps.min().min()), int(reps.max().max())
        ax.set_xlabel(f"model / task / subject (repeats per bar: {low}" + (f"-{high})" if high != low else ")"))
        ax.legend(fontsize="x-small")
    else:
        ax.text(0.5, 0.5, "no CoT runs to compare", ha="center", transform=ax.transAxes)
    _rate_axis(ax, "accuracy (% of questions)")
    ax.set_title("CoT against SIMAS", fontsize="small")
    caption = ("Each bar: accuracy over a repeat's questions, mean over repeats (CoT: condition cot; SIMAS: condition "
               "base at n agents). Error bars: ±1 standard error over repeats (none with one repeat).")
    return save_figure(fig, path, f"{caption} {note}" if note else caption)


def judge_bars(judgments: pd.DataFrame, path: str | Path, note: str | None = None) -> Path:
    """Figures 7, 13c-d: per model, task and n, win rates (SIMAS, CoT, tie; % of judged
    pairs) and the mean score totals, with the judged pairs in each label."""
    table = judge_table(judgments).reset_index()
    fig, (left, right) = _panels(2)
    if table.empty:
        left.text(0.5, 0.5, "no judgments", ha="center")
        return save_figure(fig, path, note)
    labels = [f"{r.model}\n{r.task} T={r.discussion_rounds} n={r.agents}\n({r.judged} judged)" for r in table.itertuples()]
    counts = {"SIMAS": table["simas_wins"], "CoT": table["cot_wins"], "tie": table["ties"]}
    rates = pd.DataFrame({k: 100.0 * v / table["judged"].where(table["judged"] > 0) for k, v in counts.items()}
                         ).set_axis(labels)
    bounds = {k: [wilson_rate(int(c), int(n)) for c, n in zip(v, table["judged"])] for k, v in counts.items()}
    # pandas wants asymmetric bars as (columns, 2, rows): distance below and above each bar
    err = np.array([[[100 * (r - lo) for r, lo, _ in bounds[k]], [100 * (hi - r) for r, _, hi in bounds[k]]]
                    for k in rates.columns])
    rates.plot.bar(ax=left, rot=0, yerr=np.nan_to_num(err), capsize=2)
    _rate_axis(left, "win rate (% of judged pairs)")
    left.set_title("judge verdicts (both orders must agree)", fontsize="small")
    scores = table[["simas_score", "cot_score"]].set_axis(labels)
    score_se = table[["simas_score_se", "cot_score_se"]].to_numpy(dtype=float).T
    scores.rename(columns={"simas_score": "SIMAS", "cot_score": "CoT"}).plot.bar(
        ax=right, rot=0, yerr=np.nan_to_num(score_se), capsize=2)
    right.set_ylabel("mean score (sum over criteria)")
    right.set_title("average score", fontsize="small")
    for ax in (left, right):
        ax.tick_params(axis="x", labelsize="x-small")
        ax.set_xlabel("model / task / T / n (judged pairs)")
        ax.legend(fontsize="x-small", loc="upper right", framealpha=0.9)
    caption = ("Left: share of the judged pairs each side won (a win needs both presentation orders to agree), "
               "with 95% Wilson intervals over the judged pairs. Right: mean score total over the judged pairs, "
               "error bars ±1 standard error over the judged pairs (sample SD / sqrt(judged); none below 2).")
    return save_figure(fig, path, f"{caption} {note}" if note else caption)
