"""`masgrid report RESULTS_DIR`: every table (Markdown + CSV) and figure of the families present.

MAS-Bench tables and figures sit at the top of the report folder; every other family's
report (SILO-Bench, AgentsNet, SIMAS) goes to a subfolder named after it, computed from its
own runs only (analysis/families.py). A directory without MAS-Bench runs gets no MAS-Bench
tables at all."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd
from rich.console import Console
from rich.table import Table

from masgrid.analysis import (figures, masbench_ablation, masbench_cost, masbench_failures, phases, rerun, spread,
                              stats, tables)
from masgrid.analysis.families import FAMILIES, families_present, write_family_reports
from masgrid.analysis.integrity import Damage, check_results, describe
from masgrid.analysis.load import load_results
from masgrid.analysis.markdown import to_markdown, write_table
from masgrid.analysis.token_units import approximate_token_note
from masgrid.analysis.validity import exclusion_note, include_invalid, status_counts

Builder = Callable[[pd.DataFrame, "str | None"], pd.DataFrame]


def _welch(metric: str, between: str, by: tuple[str, ...], reference: str | None, n1: bool = False) -> Builder:
    def build(runs: pd.DataFrame, task: str | None, condition: str | None = None) -> pd.DataFrame:
        runs = tables.for_task(runs, task, condition)
        return stats.welch_tests(runs[runs["agents"] == 1] if n1 else runs, metric, between, by, reference)
    return build


#: said by every table whose cells are means over runs (analysis/tables.py, "Spread")
SPREAD = "; each mean followed by its sample SD over runs (sd, ddof 1) and its runs (n / runs)"
#: name -> (title, builder(runs, main task)); the order of the report's index. Tables 9 and
#: 10 compare tasks; the others describe the main task (sorting when recorded).
TABLES: dict[str, tuple[str, Builder]] = {
    "table1": ("Table 1: model x condition x protocol (SR%, R, TE, CR%)", tables.table1),
    "table1_spread": ("Table 1 with n and dispersion: runs, mean, sample SD and SE of SR%, R, TE, CR% per cell",
                      spread.table1_spread),
    "table2": ("Table 2: SR% by N (rows) and protocol / K (columns)" + SPREAD, tables.table2),
    "table3": ("Table 3: by input family (mean inversion rate rho, SR%, R, TE, CR%)" + SPREAD, tables.table3),
    "table4": ("Table 4: tokens, communication share and cost per model (all MAS-Bench tasks and conditions)",
               lambda r, t: masbench_cost.table4(r)),
    "table4_protocol": ("Table 4 by protocol: tokens, communication share and cost per model and protocol",
                        lambda r, t: masbench_cost.table4(r, ("model", "protocol"))),
    "table6": ("Table 6: mean total tokens per run, Base and ablations vs CAMOC" + SPREAD, tables.table6),
    "table7": ("Table 7: tokens per correct instance on Shared K-V, Base vs CAMOC",
               lambda r, t: tables.table7(r, "kv", t)),
    "table8": ("Table 8: mean tokens per run at N=1 by protocol" + SPREAD, tables.table8),
    "table9": ("Table 9: Base SR% and success% by task and model" + SPREAD, lambda r, t: tables.table9(r)),
    "table10": ("Table 10: SR% and success% by condition and task" + SPREAD, lambda r, t: tables.table10(r)),
    "table11": ("Table 11: SR%, success% and Welch p vs Base per condition, per model x protocol" + SPREAD,
                masbench_ablation.table11),
    "welch_conditions_sr": ("Welch's t-tests, SR per run: each condition vs Base, per model x protocol",
                            _welch("sr", "condition", ("model", "protocol"), "base")),
    "welch_conditions_tokens": ("Welch's t-tests, total tokens per run: each condition vs Base, "
                                "per model x protocol", _welch("tokens_total", "condition", ("model", "protocol"), "base")),
    "welch_protocols_tokens_n1": ("Welch's t-tests, total tokens per run at N=1: between protocols (G.2)",
                                  _welch("tokens_total", "protocol", (), None, n1=True)),
}
HOLM = "; p uncorrected, p_holm Holm-adjusted over the table's tests"
for _name in [n for n in TABLES if n.startswith("welch_")]:
    TABLES[_name] = (TABLES[_name][0] + HOLM, TABLES[_name][1])
#: tables of one condition (Base unless `masgrid report --condition` says otherwise)
PER_CONDITION = ("table2", "table3", "table8", "welch_protocols_tokens_n1")
COST_NOTE = ("Cost uses the `price` of each run's model preset (conf/model); a model without one has no cost. "
             "cost_usd prices the recorded prompt/completion split; cost_mid/low/high_usd are the paper's "
             "50/50 estimate and its [all-input, all-output] range.")
TABLE4_NOTE = ("Tokens are every token of every run: both phases of a two-phase run (abl_message, camoc) are "
               "summed, so its tokens_per_run covers both (the paper's #Logs may count one log per phase; "
               "docs/analysis.md, \"Table 4\").")
FAILURE_NOTE = ("Failed sorting runs labelled by the rules of docs/analysis.md (\"Failure modes\"); labels are not "
                "exclusive, percentages are of failed runs; convention misalignment is a keyword estimate.")
#: tables of the two-phase conditions only (written when the results hold such runs)
PHASES_TITLE = "Two-phase conditions: R, TE, CR% and tokens per run in phase 1, phase 2 and the whole run"
RERUN_TITLE = "What the rerun changed (phase 1 -> phase 2 of abl_message and camoc): answers fixed, broken, kept"


#: the MAS-Bench tasks, in the order Tables 1-8 prefer one (the paper's are sorting)
MASBENCH_TASKS = ("sorting", "max", "prefix_sum")
OTHER_REPORTS = ("AgentsNet: python -m masgrid.analysis.agentsnet RESULTS_DIR --out DIR; "
                 "SILO-Bench: python -m masgrid.analysis.silo_report RESULTS_DIR OUT; "
                 "SIMAS: python -m masgrid.analysis.simas_report RESULTS_DIR OUT; "
                 "CooperBench: cooper/ of this report (python -m masgrid.analysis.cooper_report RESULTS_DIR OUT)")


def masbench_only(runs: pd.DataFrame, results_dir: Path) -> tuple[pd.DataFrame, str | None, str]:
    """The MAS-Bench runs, the one task Tables 1-8 describe, and a sentence on what was left
    out. Other benchmarks' runs (AgentsNet, SILO, SIMAS) have their own reports: pooling them into
    these tables would mix metrics that do not mean the same thing. ValueError if none is left."""
    mine = runs[runs["task"].isin(MASBENCH_TASKS)]
    others = runs.loc[~runs["task"].isin(MASBENCH_TASKS), "task"].value_counts().sort_index()
    left_out = ", ".join(f"{n} {t}" for t, n in others.items())
    if mine.empty:
        raise ValueError(f"no MAS-Bench runs under {results_dir} ({left_out}); use their own reports: {OTHER_REPORTS}")
    note = (f"Left out (not MAS-Bench; their own reports are listed under Families): {left_out}."
            if left_out else "")
    task = next(t for t in MASBENCH_TASKS if (mine["task"] == t).any())
    return mine, task, note


def overview(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs recorded per task, protocol and model, by status."""
    counts = runs.groupby(["task", "protocol", "model", "status"]).size().unstack("status", fill_value=0)
    counts.columns.name = None
    return counts


def build_report(results_dir: str | Path, out: str | Path | None = None, with_invalid: bool = False,
                 condition: str = "base") -> list[Path]:
    """Write every table and figure; return the files written (raises ValueError if no runs).
    Invalid runs are left out unless `with_invalid`; every table says what was left out.
    Tables 2, 3, 8 and Figure 2 describe `condition` only."""
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
    recorded = f"{len(runs)} runs ({_counts(runs)})"
    present = families_present(runs)
    reports = write_family_reports(results_dir, out, present, written)
    family_lines = ["## Families", "", *(f"- {line}" for _, line in reports.values()), ""] if reports else []
    if "masbench" not in present:
        labels = ", ".join(FAMILIES[f][0] for f in present) or "no known benchmark family"
        index = ["# masgrid report", "", f"Results: `{results_dir.resolve()}`, {recorded}.", "",
                 f"Families recorded: {labels}; no MAS-Bench runs, so no MAS-Bench tables.", "",
                 *quarantine_section(loaded.quarantined, set(loaded.runs["run_id"])),
                 *family_lines, "[Runs recorded per task, protocol and model](overview.md)", ""]
        (out / "README.md").write_text("\n".join(index), encoding="utf-8")
        return [out / "README.md", *written]
    runs, task, left_out = masbench_only(runs, results_dir)
    note = f"Runs: {exclusion_note(runs)} {approximate_token_note(tables.completed(runs))}".rstrip()
    index = ["# masgrid report", "", f"Results: `{results_dir.resolve()}`, {recorded}.", "", note, ""]
    if left_out:
        index += [left_out, ""]
    index += quarantine_section(loaded.quarantined, set(loaded.runs["run_id"]))
    index += family_lines
    index.append(f"Tables 1-8, the t-tests and Figure 2 cover task {task}; Tables 9 and 10 compare the "
                 f"MAS-Bench tasks recorded; Table 4 counts every MAS-Bench run.\n")
    accounting = _accounting_note(runs, task)
    index.append(accounting + "\n")
    table_note = f"{note}\n\n{accounting}"
    for name, (title, build) in TABLES.items():
        if name in PER_CONDITION:
            frame, title = build(runs, task, condition), f"{title}, condition {condition}"  # type: ignore[call-arg]
        else:
            frame = build(runs, task)
        # Table 4 is what was spent: both phases of a two-phase run, not the phase-2 accounting
        written += write_table(frame, out, name, title,
                               f"{note}\n\n{TABLE4_NOTE} {COST_NOTE}" if name.startswith("table4") else table_note)
        index.append(f"- [{title}]({name}.md) ([csv]({name}.csv))")
    try:
        labels, failure_note = masbench_failures.label_runs(runs, loaded.agents, loaded.events), FAILURE_NOTE
    except ValueError as exc:  # e.g. runs without agents rows: say so instead of a partial labelling
        labels, failure_note = pd.DataFrame(columns=["success", *masbench_failures.MODES]), f"Not labelled: {exc}"
    for name, frame, title in (
            ("failure_modes", masbench_failures.failure_frequency(labels), "Failure modes (section 5.3) of failed "
             "sorting runs per model, condition and protocol"),
            ("failure_labels", labels, "Failure-mode labels of every usable sorting run")):
        written += write_table(frame, out, name, title, f"{note} {failure_note}")
        index.append(f"- [{title}]({name}.md) ([csv]({name}.csv))")
    two_phase = {"phases": (PHASES_TITLE, phases.phase_table(tables.for_task(runs, task, accounting="run"))),
                 "rerun_changes": (RERUN_TITLE, rerun.rerun_changes(tables.for_task(runs, task), loaded.agents))}
    for name, (title, table) in two_phase.items():
        if not table.empty:
            written += write_table(table, out, name, title, table_note)
            index.append(f"- [{title}]({name}.md) ([csv]({name}.csv))")
    if not tables.completed(runs).empty:
        png = figures.figure2(runs, out / "figure2.png", task, note, condition)
        written += [png, *(p for p in [png.with_suffix(".pdf")] if p.is_file())]  # it writes both
        index.append(f"- Figure 2: SR, R, TE and CR against N per model, condition {condition}, mean ± SE over runs "
                     "([pdf](figure2.pdf)): ![figure 2](figure2.png)")
    index += ["", "## Table 1", "", to_markdown(tables.table1(runs, task))]
    (out / "README.md").write_text("\n".join(index), encoding="utf-8")
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


def _accounting_note(runs: pd.DataFrame, task: str | None) -> str:
    """Which phase two-phase rows report, and how many runs lack per-phase values."""
    text = ("Two-phase conditions (abl_message, camoc) report R, TE, CR and tokens of the scored phase (phase 2), "
            "one phase's accounting as in the paper's Table 1 (docs/tasks/masbench.md).")
    used = tables.for_task(runs, task, accounting="run")
    if phases.two_phase(used).any():
        text += " `phases` shows phase 1, phase 2 and the whole run side by side."
    lacking = phases.missing_phase_columns(used)
    if lacking:
        text += (f" {lacking} two-phase runs were recorded without per-phase token counts: their TE, CR and "
                 "tokens are left out of the tables rather than summed over both phases.")
    return text


def _counts(runs: pd.DataFrame) -> str:
    counts = status_counts(runs)
    order = [s for s in ("ok", "degraded", "invalid", "failed") if s in counts] + sorted(set(counts) - {"ok", "degraded", "invalid", "failed"})
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


#: tasks whose headline rate is `success` (section 2.2: every feature of the run passes its tests)
COOPER_PREFIX = "cooper/"


def headline_rate(completed: pd.DataFrame) -> pd.Series:
    """Percent per (task, protocol, model): the mean of `sr`, except for CooperBench, whose
    headline figure is the success rate (`success`; its `sr` is a mean per-agent rate)."""
    if completed.empty:
        return pd.Series(dtype=float)
    cooper = completed["task"].astype(str).str.startswith(COOPER_PREFIX)
    missing = pd.Series(float("nan"), index=completed.index)
    sr = completed["sr"].astype(float) if "sr" in completed else missing
    success = completed["success"].astype(float) if "success" in completed else missing
    value = sr.where(~cooper, success)
    return value.groupby([completed["task"], completed["protocol"], completed["model"]]).mean().mul(100)


def print_overview(results_dir: Path, console: Console | None = None, with_invalid: bool = False) -> int:
    """Runs per task, protocol and model with their status counts and mean SR% (of the runs
    the tables use), in the terminal."""
    console = console or Console()
    runs = load_results(results_dir).runs
    if runs.empty:
        console.print(f"no runs recorded under {results_dir}")
        return 1
    if with_invalid:
        runs = include_invalid(runs)
    counts = overview(runs)
    sr = headline_rate(tables.completed(runs))
    caption = exclusion_note(runs)
    if runs["task"].astype(str).str.startswith(COOPER_PREFIX).any():
        caption += (" CooperBench rows: SR% is the paper's success rate (runs whose merged code passes every "
                    "feature's tests), not the mean per-agent rate.")
    table = Table(title=f"{results_dir}: {len(runs)} runs ({_counts(runs)})", caption=caption)
    for col in ["task", "protocol", "model", *counts.columns, "SR%"]:
        table.add_column(str(col))
    for key, row in counts.iterrows():
        value = sr.get(key)
        table.add_row(*map(str, key), *map(str, row.tolist()), "-" if value is None else f"{value:.1f}")
    console.print(table)
    return 0
