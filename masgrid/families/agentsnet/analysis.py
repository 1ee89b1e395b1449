"""AgentsNet statistics, tables and figures from the `runs` table (appendix C, H-L).

Score computation (appendix C): for each model, the mean and standard error of every cell
(graph size s, task t, graph model g) over all its runs (all graph samples and repeats);
SE = sample standard deviation / sqrt(N), 0 for a single run. An aggregate over cells is
the mean of the cell means, with SE = sqrt(sum of cell SE^2) / |cells| (independent
cells, error propagation). The AgentsNet score is that aggregate over all cells.

Tables: 2 (fraction solved per model and task + AgentsNet score), 4 (soft scores),
5/6 (Byzantine), 7/8 (prompt variants), 9/10 (classical baselines per task and size),
11 (tokens per instance per model and size). Figures: 4 (stacked task contributions per
model and size), 5 (fraction solved against graph size, one line per task).

Two run sets (`run_set`): "all" (default) counts every usable run, including those the
released code never recorded (a model call failed after retries, or its scorer divides by
zero: `reference_unscorable`), which masgrid scores (0 where nobody said "Yes" in vertex
cover); "reference" leaves those out, as the paper's tables did without saying so. Every
report states which set it used and how many runs the flag concerns.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from masgrid.sdk.intervals import spread_columns
from masgrid.sdk.results import exclusion_note, read_table, usable

TASKS = ["coloring", "consensus", "leader_election", "matching", "vertex_cover"]
TASK_LABELS = {"coloring": "Coloring", "consensus": "Consensus", "leader_election": "Leader Election",
               "matching": "Matching", "vertex_cover": "Vertex Cover"}
CELL = ["agents", "problem", "graph"]
RUN_SETS = ("all", "reference")
FLAG, FLAG_REASON = "reference_unscorable", "reference_unscorable_reason"


def reference_flag(runs: pd.DataFrame) -> pd.Series:
    """True for runs the released code would not have recorded; runs recorded before the
    flag existed (null) count as recorded."""
    if FLAG not in runs.columns:
        return pd.Series(False, index=runs.index)
    return runs[FLAG].map(lambda v: bool(pd.notna(v) and v)).astype(bool)


def select_run_set(runs: pd.DataFrame, run_set: str = "all") -> pd.DataFrame:
    """The runs a table counts under `run_set` (module docstring)."""
    if run_set not in RUN_SETS:
        raise ValueError(f"run_set: one of {', '.join(RUN_SETS)}, not {run_set!r}")
    return runs if run_set == "all" else runs[~reference_flag(runs)]


def run_set_note(runs: pd.DataFrame, run_set: str = "all") -> str:
    """One sentence on the flagged runs among the usable `runs` and what the tables did with them."""
    flagged = reference_flag(runs)
    unknown = int(runs[FLAG].isna().sum()) if FLAG in runs.columns else len(runs)
    reasons = runs.loc[flagged, FLAG_REASON].fillna("unknown").value_counts() if FLAG_REASON in runs.columns else {}
    why = ", ".join(f"{int(v)} {k}" for k, v in sorted(dict(reasons).items()))
    if run_set == "all":
        text = (f"Run set 'all': {int(flagged.sum())} runs the released code would not have recorded are counted "
                f"with masgrid's scores" + (f" ({why})" if why else ""))
    else:
        text = (f"Run set 'reference': {int(flagged.sum())} runs the released code would not have recorded are "
                f"left out" + (f" ({why})" if why else ""))
    if unknown:
        text += f"; {unknown} runs recorded without the flag are treated as recorded"
    return text + "."


def agentsnet_runs(runs: pd.DataFrame, run_set: str = "all", parser: str | None = None) -> pd.DataFrame:
    """Usable AgentsNet runs (analysis/usable_runs.py) of `run_set`, with a `problem` column
    (task name without the family). Runs read with different parser modes
    (`reply_parser`; missing = strict) are never pooled: give `parser` when both occur."""
    if runs.empty:
        return runs
    family = usable(runs[runs["task"].astype(str).str.startswith("agentsnet/")])
    modes = family["reply_parser"].fillna("strict") if "reply_parser" in family.columns else \
        pd.Series("strict", index=family.index)
    if parser is not None:
        family = family[modes == parser]
    elif modes.nunique() > 1:
        raise ValueError("runs read with both parser modes (reply_parser strict and reference); choose one (--parser)")
    df = select_run_set(family, run_set).copy()
    df["problem"] = df["task"].str.split("/", n=1).str[1]
    df["reply_parser"] = modes.loc[df.index]
    df["success"] = df["success"].astype(float)
    if "byzantine_setting" not in df.columns:
        df["byzantine_setting"] = "none"
    df["byzantine_setting"] = df["byzantine_setting"].fillna("none")
    return df


def load_runs(results_dir: str | Path, run_set: str = "all", parser: str | None = None) -> pd.DataFrame:
    return agentsnet_runs(read_table(results_dir, "runs"), run_set, parser)


def _se(values: pd.Series) -> float:
    n = len(values)
    return float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0


def cell_stats(runs: pd.DataFrame, value: str = "success", keys: list[str] | None = None) -> pd.DataFrame:
    """Mean, SE and N per (model, size, task, graph model) cell (eqs. 1-2)."""
    keys = ["model", *CELL] if keys is None else keys
    grouped = runs.groupby(keys, dropna=False)[value]
    out = grouped.agg(mean="mean", n="count").reset_index()
    out["se"] = grouped.apply(_se).to_numpy()
    return out


def propagate(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean of cell means and the propagated SE (eqs. 3-4) per group of `by`."""
    rows = []
    for key, grp in cells.groupby(by, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), "mean": grp["mean"].mean(),
                     "se": math.sqrt((grp["se"] ** 2).sum()) / len(grp), "cells": len(grp),
                     "n": int(grp["n"].sum())})
    return pd.DataFrame(rows)


def pooled(runs: pd.DataFrame, by: list[str], value: str = "success") -> pd.DataFrame:
    """Mean and SE over all runs of each group (appendix I-K tables: mean +- SE of runs)."""
    grouped = runs.groupby(by, dropna=False)[value]
    out = grouped.agg(mean="mean", n="count").reset_index()
    out["se"] = grouped.apply(_se).to_numpy()
    return out


def fmt(mean: float, se: float, style: str = "paren", n: int | None = None) -> str:
    """`mean (SE)` or `mean ± SE`, then `[n=runs]` (the runs behind the cell) when given."""
    cell = f"{mean:.2f} ({se:.2f})" if style == "paren" else f"{mean:.2f} ± {se:.2f}"
    return cell if n is None else f"{cell} [n={int(n)}]"


def _wide(long: pd.DataFrame, index: str, columns: str, style: str = "paren") -> pd.DataFrame:
    long = long.assign(cell=[fmt(m, s, style, n) for m, s, n in zip(long["mean"], long["se"], long["n"])])
    return long.pivot(index=index, columns=columns, values="cell")


# -- tables -------------------------------------------------------------------------------------

def table_solved(runs: pd.DataFrame, value: str = "success", with_total: bool = True) -> pd.DataFrame:
    """Table 2 (value="success") or Table 4 (value="soft_score"): per model and task, and the
    AgentsNet score over all cells of a model. The paper's score averages all five tasks, so
    a model recorded on fewer carries "[k of 5 tasks]" in that cell rather than passing for it."""
    cells = cell_stats(runs, value)
    per_task = propagate(cells, ["model", "problem"])
    table = _wide(per_task, "model", "problem").rename(columns=TASK_LABELS)
    if with_total:
        total = propagate(cells, ["model"]).set_index("model")
        tasks = cells.groupby("model")["problem"].nunique()
        table["AgentsNet"] = [fmt(total.loc[m, "mean"], total.loc[m, "se"], n=total.loc[m, "n"])
                              + (f" [{tasks[m]} of {len(TASKS)} tasks]" if tasks[m] < len(TASKS) else "")
                              for m in table.index]
    return table


def agentsnet_score(runs: pd.DataFrame) -> pd.DataFrame:
    """Per model: AgentsNet score and its propagated SE (Figure 1's y values)."""
    return propagate(cell_stats(runs), ["model"])


def table_by_size(runs: pd.DataFrame, value: str = "success") -> pd.DataFrame:
    """Tables 9 and 10: task x graph size, mean +- SE over all runs of the size."""
    long = pooled(runs, ["problem", "agents"], value)
    return _wide(long, "problem", "agents", "pm").rename(index=TASK_LABELS)


def table_byzantine(runs: pd.DataFrame) -> pd.DataFrame:
    """Tables 5 and 6: task x (size, aware/unaware), success on honest agents."""
    byz = runs[runs["byzantine_setting"].isin(["aware", "unaware"])]
    long = pooled(byz, ["problem", "agents", "byzantine_setting"])
    long["column"] = long["agents"].astype(str) + " " + long["byzantine_setting"]
    return _wide(long, "problem", "column", "pm").rename(index=TASK_LABELS)


def table_prompt_variants(runs: pd.DataFrame) -> pd.DataFrame:
    """Tables 7 and 8: prompt variant x task, plus the variant's average over tasks."""
    long = pooled(runs, ["condition", "problem"])
    table = _wide(long, "condition", "problem", "pm").rename(columns=TASK_LABELS)
    avg = pooled(runs, ["condition"])
    table["Average"] = [fmt(r["mean"], r["se"], "pm", r["n"]) for _, r in avg.set_index("condition").loc[table.index].iterrows()]
    return table


def table_tokens(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 11: mean input / output / total tokens per instance, per model and size, each
    followed by its sample SD over runs (`<col> sd`) and the runs averaged (`<col> n`)."""
    keys = ["model", "agents"]
    agg = pd.concat([spread_columns(runs, keys, col, col) for col in ("tokens_in", "tokens_out", "tokens_total")],
                    axis=1)
    wide = agg.unstack("agents").swaplevel(0, 1, axis=1)
    sizes = sorted(set(wide.columns.get_level_values(0)))
    return wide.reindex(columns=pd.MultiIndex.from_product([sizes, list(agg.columns)]))


# -- figures ------------------------------------------------------------------------------------

def figure_task_contributions(runs: pd.DataFrame, path: str | Path) -> Path:
    """Figure 4: per size, one stacked bar per model; each task adds its fraction solved / 5."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from masgrid.sdk.figures import save_figure

    cells = cell_stats(runs)
    per = propagate(cells, ["model", "agents", "problem"])
    sizes = sorted(per["agents"].unique())
    models = sorted(per["model"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.6), sharey=True, squeeze=False)
    for ax, size in zip(axes[0], sizes):
        bottom = [0.0] * len(models)
        for task in TASKS:
            vals = []
            for m in models:
                hit = per[(per["model"] == m) & (per["agents"] == size) & (per["problem"] == task)]
                vals.append(float(hit["mean"].iloc[0]) / len(TASKS) if len(hit) else 0.0)
            ax.bar(models, vals, bottom=bottom, label=TASK_LABELS[task])
            bottom = [b + v for b, v in zip(bottom, vals)]
        # the score's SE: the tasks' propagated SEs combined, each task weighing 1/5
        here = per[per["agents"] == size]
        ses = [math.sqrt((here[here["model"] == m]["se"].fillna(0) ** 2).sum()) / len(TASKS) for m in models]
        ax.errorbar(models, bottom, yerr=ses, fmt="none", ecolor="black", capsize=3)
        counts = runs[runs["agents"] == size].groupby("model").size()
        for m, top, se in zip(models, bottom, ses):
            ax.annotate(f"n={int(counts.get(m, 0))}", (m, top + se), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=6)
        ax.set_title(f"{size} agents")
        ax.set_ylim(0, 1)
        ax.set_xlabel("model")
        ax.tick_params(axis="x", labelrotation=45)
    axes[0][0].set_ylabel("AgentsNet score (task ≤ 0.2 each)")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    return save_figure(fig, path, "Each segment: a task's fraction solved / 5, mean of its cells' means (graph "
                                  "models and samples pooled, appendix C); a bar's height is the AgentsNet score, n "
                                  "its runs over all tasks. Error bars: ±1 standard error of the score, propagated "
                                  "over cells (eqs. 3-4) and tasks.")


def figure_scaling(runs: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Figure 5: fraction solved against graph size, one line per task (+- SE band)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from masgrid.sdk.figures import save_figure

    long = pooled(runs, ["problem", "agents"])
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for i, task in enumerate(TASKS):
        part = long[long["problem"] == task].sort_values("agents")
        if part.empty:
            continue
        (line,) = ax.plot(part["agents"], part["mean"], marker="o", label=TASK_LABELS[task])
        ax.fill_between(part["agents"], part["mean"] - part["se"].fillna(0), part["mean"] + part["se"].fillna(0),
                        alpha=0.15)
        for x, y, n in zip(part["agents"], part["mean"], part["n"]):
            ax.annotate(f"n={int(n)}", (x, y), textcoords="offset points", xytext=(4, 2 + 7 * i), fontsize=6,
                        color=line.get_color())  # stacked per task so labels of close points stay apart
    if not long.empty:
        ax.set_xticks(sorted(long["agents"].unique()))
    ax.set_xlabel("agents (graph size, nodes)")
    ax.set_ylabel("fraction solved (0-1)")
    ax.set_ylim(0, 1)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7)
    return save_figure(fig, path, "Each point: fraction of runs solved for a task and graph size, all its runs pooled "
                                  "(models, graph models and samples; appendix C), n = runs. Band: ±1 standard "
                                  "error over those runs.")


# -- command line ---------------------------------------------------------------------------------

def _flat(table: pd.DataFrame) -> pd.DataFrame:
    """(size, tokens_in) column pairs as "size tokens_in" for Markdown."""
    return table.set_axis([f"{a} {b.removeprefix('tokens_')}" for a, b in table.columns], axis=1)


def write_report(results_dir: str | Path, out_dir: str | Path, run_set: str = "all",
                 parser: str | None = None) -> Path:
    """All tables as one Markdown file plus Figures 4 and 5, from a results directory."""
    recorded = read_table(results_dir, "runs")
    runs = agentsnet_runs(recorded, run_set, parser)
    if runs.empty:
        raise ValueError(f"no usable AgentsNet runs under {results_dir} (run set {run_set!r})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plain = runs[(runs["byzantine_setting"] == "none") & (runs["condition"] == "base")]
    family = recorded[recorded["task"].astype(str).str.startswith("agentsnet/")]
    parts = ["# AgentsNet report", f"Runs from `{results_dir}`: {exclusion_note(family)}",
             run_set_note(agentsnet_runs(recorded, parser=parser), run_set),
             f"Replies read with agentsnet.parser={parser or runs['reply_parser'].iloc[0]}."]
    if not plain.empty:
        parts += ["## Table 2: fraction solved, mean (SE propagated over cells) [n = runs]", table_solved(plain).to_markdown(),
                  "## Table 4: soft scores, mean (SE propagated over cells) [n = runs]", table_solved(plain, "soft_score", with_total=False).to_markdown(),
                  "## Tables 9/10: fraction solved by graph size, mean ± SE over runs [n = runs]", table_by_size(plain).to_markdown(),
                  "## Table 11: tokens per instance, mean, sample SD (sd) and runs (n)", _flat(table_tokens(plain).round(0)).to_markdown()]
        figure_task_contributions(plain, out / "agentsnet_fig4.png")
        figure_scaling(plain, out / "agentsnet_fig5.png")
        parts += ["![Figure 4](agentsnet_fig4.png)", "![Figure 5](agentsnet_fig5.png)"]
    if runs["byzantine_setting"].isin(["aware", "unaware"]).any():
        parts += ["## Tables 5/6: Byzantine agents (honest agents scored), mean ± SE over runs [n = runs]", table_byzantine(runs).to_markdown()]
    if runs["condition"].nunique() > 1:
        clean = runs[runs["byzantine_setting"] == "none"]
        parts += ["## Tables 7/8: prompt variants, mean ± SE over runs [n = runs]", table_prompt_variants(clean).to_markdown()]
    path = out / "agentsnet_report.md"
    path.write_text("\n\n".join(parts) + "\n")
    return path


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description="AgentsNet tables and figures from a results directory")
    cli.add_argument("results_dir")
    cli.add_argument("--out", default="agentsnet_report")
    cli.add_argument("--run-set", choices=RUN_SETS, default="all",
                        help="all: every usable run (default); reference: without the runs the released "
                             "code would not have recorded (reference_unscorable)")
    cli.add_argument("--parser", choices=("strict", "reference"), default=None,
                     help="only runs read with this agentsnet.parser (required when both occur)")
    args = cli.parse_args()
    print(write_report(args.results_dir, args.out, args.run_set, args.parser))
