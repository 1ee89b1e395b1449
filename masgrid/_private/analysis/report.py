"""`masgrid report RESULTS_DIR`: every table (Markdown + CSV) and figure of the families present.

The report folder holds an index (README.md) and the runs' overview; each family's own report
goes to a subfolder named after it (report/<family>/), computed from its own runs only
(analysis/families.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from masgrid._private.analysis.channel import write_channel_section
from masgrid._private.analysis.adaptive import adaptive_section
from masgrid._private.analysis.model_phases import phases_section
from masgrid._private.analysis.families import families_present, write_family_reports
from masgrid._private.analysis.integrity import Damage, check_results, describe
from masgrid._private.analysis.load import load_results
from masgrid._private.analysis.markdown import write_table
from masgrid._private.analysis.response_cache import cache_sentence
from masgrid._private.analysis.teams import write_teams_section
from masgrid._private.analysis.topology import write_topology_section
from masgrid._private.analysis.usable_runs import exclusion_note, include_invalid, status_counts, usable
from masgrid.family import families, family_of


def overview(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs recorded per task, protocol and model, by status."""
    counts = runs.groupby(["task", "protocol", "model", "status"]).size().unstack("status", fill_value=0)
    counts.columns.name = None
    return counts


def build_report(results_dir: str | Path, out: str | Path | None = None, with_invalid: bool = False,
                 condition: str = "base") -> list[Path]:
    """Write the index, the overview and every family's report; return the files written, the
    index first (ValueError if no runs). Invalid runs are left out unless `with_invalid`; every
    table says what was left out. `condition`: what per-condition tables describe (MAS-Bench)."""
    results_dir = Path(results_dir)
    out = Path(out) if out is not None else results_dir / "report"
    loaded = load_results(results_dir)
    runs = loaded.runs
    if runs.empty:
        aside = (f" ({len(loaded.quarantined)} damaged files set aside: {results_dir / 'quarantine' / 'log.jsonl'})"
                 if loaded.quarantined else "")
        raise ValueError(f"no runs recorded under {results_dir}{aside}")
    if with_invalid:
        runs = include_invalid(runs)
    written = write_table(overview(runs), out, "overview", f"Runs recorded under {results_dir}")
    present = families_present(runs)
    reports = write_family_reports(results_dir, out, present, written, with_invalid=with_invalid,
                                   condition=condition)
    topology_files, topology_lines = write_topology_section(usable(runs), out)
    written += topology_files
    registry = families()
    labels = ", ".join(registry[f].label for f in present) or "no known benchmark family"
    unclaimed = sorted({str(t) for t in runs["task"] if family_of(str(t)) is None})
    index = ["# masgrid report", "", f"Results: `{results_dir.resolve()}`, {len(runs)} runs ({_counts(runs)}).", "",
             f"Runs: {exclusion_note(runs)}", "", f"Families recorded: {labels}.", ""]
    cached = cache_sentence(runs)  # only when some run replayed calls from model.cache
    if cached:
        index += [cached, ""]
    if unclaimed:
        index += [f"Tasks no installed family claims (no tables): {', '.join(unclaimed)}.", ""]
    if reports:
        index += ["## Families", "", *(f"- {line}" for _, line in reports.values()), ""]
    team_lines, team_files = write_teams_section(runs, out)  # only when some run used a mixed-model team
    index += team_lines
    written += team_files
    channel_files, channel_lines = write_channel_section(runs, out)  # only when runs used a channel
    written += channel_files
    index += channel_lines
    index += topology_lines
    phase_lines = phases_section(results_dir, out)  # only when a sweep deployed models in phases
    if phase_lines:
        index += phase_lines
        written += [out / "phases.md", out / "phases.csv"]
    index += quarantine_section(loaded.quarantined, set(loaded.runs["run_id"]))
    index += ["[Runs recorded per task, protocol and model](overview.md)", ""]
    (out / "README.md").write_text("\n".join(index), encoding="utf-8")
    adaptive = adaptive_section(results_dir, out)  # after every table is written: it notes the rule under each
    if adaptive:
        (out / "README.md").write_text("\n".join([*index, *adaptive]) + "\n", encoding="utf-8")
        written += [out / "adaptive.md", out / "adaptive.csv"]
    return [out / "README.md", *written]


def quarantine_section(entries: list[Damage], recorded: set[str]) -> list[str]:
    """Index lines for every file the quarantine log lists, whoever set it aside (a resume, or
    this report's own load): the tables silently lack those runs otherwise. Each says why,
    what was lost, and whether its run has been recorded again since."""
    if not entries:
        return []
    lines = [f"## Damaged files set aside ({len(entries)})", "",
             "Listed in `quarantine/log.jsonl` and moved under `quarantine/`; a run that is not recorded "
             "again is missing from every table until a resume re-runs it.", ""]
    for entry, line in zip(entries, describe(entries)):
        now = ("" if not entry.run_id else f"; now: run {entry.run_id} recorded again" if entry.run_id in recorded
               else f"; now: run {entry.run_id} not recorded (a resume runs it)")
        lines.append(f"- {entry.time or 'time unknown'}: {line}{now}")
    return [*lines, ""]


def _counts(runs: pd.DataFrame) -> str:
    counts = status_counts(runs)
    known = ("ok", "degraded", "invalid", "failed")
    order = [s for s in known if s in counts] + sorted(set(counts) - set(known))
    return ", ".join(f"{counts[s]} {s}" for s in order)


def write_report(results_dir: Path, out: Path | None = None, console: Console | None = None,
                 with_invalid: bool = False, condition: str = "base") -> int:
    """CLI entry: build the report, print the overview and where everything went."""
    console = console or Console()
    for line in describe(check_results(results_dir) if Path(results_dir).is_dir() else []):
        console.print(f"masgrid report: {line}", markup=False)
    try:
        files = build_report(results_dir, out, with_invalid, condition)
    except ValueError as exc:
        console.print(f"masgrid report: {exc}")
        return 1
    print_overview(results_dir, console, with_invalid)
    console.print(f"report: {len(set(files))} files in {files[0].parent} (index: {files[0]})")
    return 0


def headline_rate(completed: pd.DataFrame) -> pd.Series:
    """Percent per (task, protocol, model): the mean of each family's headline metric
    (`Family.headline`: `sr` unless the family says otherwise, e.g. CooperBench's `success`)."""
    if completed.empty:
        return pd.Series(dtype=float)
    column = completed["task"].astype(str).map(_headline)
    value = pd.Series(float("nan"), index=completed.index)
    for name in column.unique():
        if name in completed:
            rows = column == name
            value[rows] = completed.loc[rows, name].astype(float)
    return value.groupby([completed["task"], completed["protocol"], completed["model"]]).mean().mul(100)


def _headline(task: str) -> str:
    family = family_of(task)
    return "sr" if family is None else family.headline


def print_overview(results_dir: Path, console: Console | None = None, with_invalid: bool = False) -> int:
    """Runs per task, protocol and model with their status counts and mean headline rate (of
    the runs the tables use), in the terminal."""
    console = console or Console()
    runs = load_results(results_dir).runs
    if runs.empty:
        console.print(f"no runs recorded under {results_dir}")
        return 1
    if with_invalid:
        runs = include_invalid(runs)
    counts = overview(runs)
    sr = headline_rate(usable(runs))
    caption = exclusion_note(runs)
    cached = cache_sentence(runs)
    if cached:
        caption += f" {cached}"
    for key in families_present(runs):
        family = families()[key]
        if family.headline_note:
            caption += f" {family.label} rows: {family.headline_note}"
    table = Table(title=f"{results_dir}: {len(runs)} runs ({_counts(runs)})", caption=caption)
    for col in ["task", "protocol", "model", *counts.columns, "SR%"]:
        table.add_column(str(col))
    for key, row in counts.iterrows():
        value = sr.get(key)
        table.add_row(*map(str, key), *map(str, row.tolist()), "-" if value is None else f"{value:.1f}")
    console.print(table)
    return 0
