"""The MAS-Bench report: Tables 1-11, the Welch tests, failure modes, the two-phase tables and
Figure 2, from the MAS-Bench runs of a results directory (`masgrid report` writes it to
report/masbench/)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from masgrid.families.masbench import ablation as masbench_ablation
from masgrid.families.masbench import cost as masbench_cost
from masgrid.families.masbench import failures as masbench_failures
from masgrid.families.masbench import figures, phases, rerun, table1_with_spread, tables
from masgrid.sdk import stats
from masgrid.sdk.results import (
    approximate_token_note,
    exclusion_note,
    include_invalid,
    load_results,
    to_markdown,
    write_table,
)

Builder = Callable[[pd.DataFrame, "str | None"], pd.DataFrame]


def _welch(metric: str, between: str, by: tuple[str, ...], reference: str | None, n1: bool = False) -> Builder:
    def build(runs: pd.DataFrame, task: str | None, condition: str | None = None) -> pd.DataFrame:
        runs = tables.for_task(runs, task, condition)
        return stats.welch_tests(runs[runs["agents"] == 1] if n1 else runs, metric, between, by, reference)
    return build


#: said by every table whose cells are means over runs (families/masbench/tables.py, "Spread")
SPREAD = "; each mean followed by its sample SD over runs (sd, ddof 1) and its runs (n / runs)"
#: name -> (title, builder(runs, main task)); the order of the report's index. Tables 9 and
#: 10 compare tasks; the others describe the main task (sorting when recorded).
TABLES: dict[str, tuple[str, Builder]] = {
    "table1": ("Table 1: model x condition x protocol (SR%, R, TE, CR%)", tables.table1),
    "table1_spread": ("Table 1 with n and dispersion: runs, mean, sample SD and SE of SR%, R, TE, CR% per cell",
                      table1_with_spread.table1_spread),
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


def masbench_only(runs: pd.DataFrame, results_dir: Path) -> tuple[pd.DataFrame, str | None, str]:
    """The MAS-Bench runs, the one task Tables 1-8 describe, and a sentence on what was left
    out. Other benchmarks' runs (AgentsNet, SILO, SIMAS) have their own reports: pooling them into
    these tables would mix metrics that do not mean the same thing. ValueError if none is left."""
    mine = runs[runs["task"].isin(MASBENCH_TASKS)]
    others = runs.loc[~runs["task"].isin(MASBENCH_TASKS), "task"].value_counts().sort_index()
    left_out = ", ".join(f"{n} {t}" for t, n in others.items())
    if mine.empty:
        raise ValueError(f"no MAS-Bench runs under {results_dir} ({left_out})")
    note = (f"Left out (not MAS-Bench; each family has its own report): {left_out}."
            if left_out else "")
    task = next(t for t in MASBENCH_TASKS if (mine["task"] == t).any())
    return mine, task, note



def write_family_report(results_dir: str | Path, out: str | Path, with_invalid: bool = False,
                        condition: str = "base") -> list[Path]:
    """Write every MAS-Bench table and figure to `out`; return the files, index first (ValueError
    when the results hold no MAS-Bench runs). Invalid runs are left out unless `with_invalid`;
    Tables 2, 3, 8 and Figure 2 describe `condition` only."""
    results_dir, out = Path(results_dir), Path(out)
    loaded = load_results(results_dir)
    runs = include_invalid(loaded.runs) if with_invalid else loaded.runs
    runs, task, left_out = masbench_only(runs, results_dir)
    note = f"Runs: {exclusion_note(runs)} {approximate_token_note(tables.completed(runs))}".rstrip()
    index = ["# MAS-Bench", "", note, ""]
    if left_out:
        index += [left_out, ""]
    index.append(f"Tables 1-8, the t-tests and Figure 2 cover task {task}; Tables 9 and 10 compare the "
                 f"MAS-Bench tasks recorded; Table 4 counts every MAS-Bench run.\n")
    accounting = _accounting_note(runs, task)
    index.append(accounting + "\n")
    table_note = f"{note}\n\n{accounting}"
    written: list[Path] = []
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
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text("\n".join(index), encoding="utf-8")
    return [out / "README.md", *written]


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


