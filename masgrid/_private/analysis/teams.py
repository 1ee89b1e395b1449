"""The report's "Teams" section: success by team composition and by where the strong member sat.

Only runs with a `team_composition` (mixed-model teams, docs/team.md) are used, and only the
usable ones (status ok or degraded; a team run's status judges each member on its own calls).
Success is the runs' `success` column; runs whose task has no answer key (null) are not
counted. Intervals are Wilson score intervals at 95 %.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from masgrid._private.analysis.dispersion import wilson
from masgrid._private.analysis.markdown import write_table
from masgrid._private.analysis.usable_runs import exclusion_note, usable

log = logging.getLogger(__name__)
KEYS = ["task", "team_composition", "team_strong", "team_placement"]


def team_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The usable team runs (empty when the results hold none)."""
    if "team_composition" not in runs or runs["team_composition"].isna().all():
        return runs.iloc[0:0]
    return usable(runs[runs["team_composition"].notna()])


def _rate_table(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    scored = runs[runs["success"].notna()]
    rows = []
    for key, cell in scored.groupby(keys, dropna=False, sort=True):
        n, k = len(cell), int(cell["success"].astype(bool).sum())
        low, high = wilson(k, n)
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "runs": n, "solved": k,
                     "success": k / n, "ci95 low": low, "ci95 high": high,
                     "sr": cell["sr"].mean() if "sr" in cell else math.nan})
    return pd.DataFrame(rows, columns=[*keys, "runs", "solved", "success", "ci95 low", "ci95 high", "sr"])


def by_composition(runs: pd.DataFrame) -> pd.DataFrame:
    """Success per task, composition, strong member and placement."""
    return _rate_table(runs, KEYS)


def by_strong_degree(runs: pd.DataFrame) -> pd.DataFrame:
    """Success per task, composition and the strong member's mean degree (rounded to 0.5),
    for runs on a communication graph."""
    graph = runs[runs["team_strong_degree"].notna()]
    graph = graph.assign(strong_degree=(graph["team_strong_degree"] * 2).round() / 2)
    return _rate_table(graph, ["task", "team_composition", "team_strong", "strong_degree"])


def member_usage(runs: pd.DataFrame) -> pd.DataFrame:
    """Per task, composition and member: agents, calls, failed calls and tokens summed over
    runs, from each run's `team_by_model`."""
    rows = []
    for run in runs.itertuples():
        for member, row in json.loads(run.team_by_model or "{}").items():
            rows.append({"task": run.task, "team_composition": run.team_composition, "member": member,
                         "runs": 1, **{k: row[k] for k in ("model_calls", "model_errors", "tokens_total")}})
    if not rows:
        return pd.DataFrame(columns=["task", "team_composition", "member", "runs", "model_calls", "model_errors",
                                     "tokens_total", "error rate"])
    out = pd.DataFrame(rows).groupby(["task", "team_composition", "member"], as_index=False).sum()
    out["error rate"] = np.where(out["model_calls"] > 0, out["model_errors"] / out["model_calls"].clip(lower=1), 0.0)
    return out


def _err(cell: pd.DataFrame) -> np.ndarray:
    """Error bar lengths below and above each rate (its Wilson interval)."""
    rate = cell["success"].to_numpy(float)
    return np.vstack([rate - cell["ci95 low"].to_numpy(float), cell["ci95 high"].to_numpy(float) - rate])


def figure(table: pd.DataFrame, degree: pd.DataFrame, path: Path, note: str) -> Path:
    """Left: success by placement, one bar group per composition (95 % Wilson intervals).
    Right: success against the strong member's mean degree, one line per composition."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    labels = [f"{t}\n{c}" for t, c in dict.fromkeys(zip(table["task"], table["team_composition"]))]
    placements = sorted(table["team_placement"].dropna().unique())
    width = 0.8 / max(1, len(placements))
    for j, placement in enumerate(placements):
        cell = table[table["team_placement"] == placement]
        x = [labels.index(f"{t}\n{c}") + j * width for t, c in zip(cell["task"], cell["team_composition"])]
        left.bar(x, cell["success"].to_numpy(float), width, yerr=_err(cell), capsize=3, label=placement)
    left.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels, fontsize=7)
    left.set_ylabel("success rate")
    left.set_ylim(0, 1.05)
    left.legend(title="placement", fontsize=7)
    for (task, comp), cell in degree.groupby(["task", "team_composition"]):
        cell = cell.sort_values("strong_degree")
        right.errorbar(cell["strong_degree"].to_numpy(float), cell["success"].to_numpy(float), yerr=_err(cell),
                       marker="o", capsize=3,
                       label=f"{task} {comp}")
    right.set_xlabel("mean degree of the strong member's agents")
    right.set_ylabel("success rate")
    right.set_ylim(0, 1.05)
    if not degree.empty:
        right.legend(fontsize=7)
    else:
        right.text(0.5, 0.5, "no team run on a graph", ha="center", transform=right.transAxes)
    fig.text(0.01, 0.01, note, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def write_teams_section(runs: pd.DataFrame, out: Path) -> tuple[list[str], list[Path]]:
    """Index lines and files of the Teams section; nothing when no run used a team."""
    every = runs[runs["team_composition"].notna()] if "team_composition" in runs else runs.iloc[0:0]
    if every.empty:
        return [], []
    teams = team_runs(runs)
    note = (f"Team runs: {exclusion_note(every)} Success: share of runs solved (null success not counted), "
            "95 % Wilson interval; strong member: a composition's first entry (docs/team.md).")
    folder = out / "teams"
    table, degree = by_composition(teams), by_strong_degree(teams)
    written = write_table(table, folder, "success_by_composition", "Success by team composition and placement", note)
    written += write_table(degree, folder, "success_by_strong_degree",
                           "Success against the strong member's position (mean degree of its agents)", note)
    written += write_table(member_usage(teams), folder, "usage_by_member",
                           "Model calls, failures and tokens per team member", note)
    written.append(figure(table, degree, folder / "success_by_placement.png", note))
    lines = ["## Teams", "", f"{len(teams)} usable team runs, {table['team_composition'].nunique()} compositions.", "",
             "- [Success by composition and placement](teams/success_by_composition.md)",
             "- [Success against the strong member's position](teams/success_by_strong_degree.md)",
             "- [Usage per member](teams/usage_by_member.md)",
             "- ![Success by placement and strong position](teams/success_by_placement.png)", ""]
    return lines, written
