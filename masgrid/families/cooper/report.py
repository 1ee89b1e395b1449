"""Write every CooperBench table and figure of a results directory to a folder.

    python -m masgrid.families.cooper.report RESULTS_DIR OUT_DIR

`masgrid report` calls `write_section` into REPORT/cooper/ when the results hold CooperBench
runs. README.md says which runs were used and left out (analysis/usable_runs.py), and how many
ran without the sandbox; tables as Markdown and CSV, figures as PNG and PDF.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from masgrid.families.cooper import analysis as cooper
from masgrid.families.cooper import comm_rates as cooper_comm_rates
from masgrid.families.cooper import difficulty as cooper_difficulty
from masgrid.families.cooper import figures as cooper_figures
from masgrid.families.cooper import messages as cooper_messages
from masgrid.families.cooper import timeline as cooper_timeline
from masgrid.sdk.reports import report_main
from masgrid.sdk.results import exclusion_note, load_results, write_table

LABEL_NOTE = ("Message types are our rule-based labels (docs/tasks/cooperbench-analysis.md), not the paper's; "
              "repetition and unanswered-question counts are textual proxies, not its LLM judge (the judged rates, "
              "when `masgrid cooper judge` was run, are in communication_errors_judged).")


def _notes(runs: pd.DataFrame) -> str:
    family = runs[runs["task"].astype(str).str.startswith("cooper/")]
    note = f"Runs: {exclusion_note(family)}"
    used = cooper.cooper_runs(family)
    if "cooper_sandbox" in used.columns:
        bare = int((used["cooper_sandbox"].astype(str) == "none").sum())
        if bare:
            note += f" {bare} runs ran without the sandbox (cooper.sandbox=none)."
    for column, text in (("agents_capped", "had an agent stopped by the action cap"),
                         ("agents_without_patch", "had an agent that left no execution record (empty patch)")):
        if column in used.columns and (used[column].fillna(0) > 0).any():
            note += f" {int((used[column].fillna(0) > 0).sum())} runs {text}."
    unscored = int(used["success"].isna().sum()) if not used.empty else 0
    if unscored:
        note += f" {unscored} runs have no success (evaluation did not finish) and are not trials."
    return note


def write_section(runs: pd.DataFrame, events: pd.DataFrame, out: str | Path, source: str = "",
                  judgments: pd.DataFrame | None = None) -> list[Path]:
    """Tables, figures and README.md of the CooperBench runs in `runs` under `out`; ValueError
    when there are none. `judgments`: the appendix J judge's rows (`masgrid cooper judge`);
    without any the README says the judge was not run instead of showing rates."""
    if not cooper.is_cooper(runs):
        raise ValueError(f"no CooperBench runs{' under ' + source if source else ''}")
    out = Path(out)
    note = _notes(runs)
    difficulty = cooper_difficulty.difficulty(runs)
    curves = cooper_difficulty.curves(runs, difficulty)
    d_note = f"{note} {cooper_difficulty.difficulty_note(runs, difficulty)}"
    merge = cooper.merge_table(runs)
    conflicts = cooper.conflict_rate(runs)
    comm = cooper_messages.communication(runs, events)
    success = cooper.success_by_setting(runs)
    scaling = cooper.scaling(runs)
    #: (file name, table, title, note) of every table in the README
    tables: tuple[tuple[str, pd.DataFrame, str, str], ...] = (
        ("success", success, "Success rate by model and setting, two-feature tasks (95% Wilson; Figure 3 left, 4a)",
         note),
        ("gap", cooper.gap(runs), "Solo - Coop gap per model (Newcombe 95% interval; Figure 3)", note),
        ("comm_gap", cooper.gap(runs, "coop", "nocomm"), "Coop - No-comm success per model (Figure 4a)", note),
        ("difficulty", difficulty, "Relative difficulty d(t) per two-feature task (appendix D)", d_note),
        ("curves", curves, "Success by difficulty bucket, model and setting (95% Wilson; appendix E)", d_note),
        ("gap_by_difficulty", cooper_difficulty.gap_by_difficulty(curves), "Solo - Coop per difficulty bucket "
         "(Newcombe 95%; Figure 3 right)", d_note),
        ("table4", cooper_difficulty.retention(curves), "Table 4: AUC, Delta AUC and retention per model", d_note),
        ("table5", merge, "Table 5: success (%) by the end of each merge stage (cumulative)", note),
        ("table5_comm_effect", cooper.comm_effect(merge), "Table 5, last column: with - without communication "
         "(final stage, points)", note),
        ("conflicts", conflicts, "Naive-merge conflict rate with (coop) and without (nocomm) communication "
         "(95% Wilson; Figure 4b)", note),
        ("conflicts_difference", cooper.conflict_difference(conflicts), "Conflict rate coop - nocomm "
         "(Newcombe 95%)", note),
        ("communication", comm, "Messages as a share of execution steps by type (Figure 4c)", f"{note} {LABEL_NOTE}"),
        ("communication_patterns", cooper_messages.patterns(runs, events), "Appendix I: messages of coop runs "
         "with and without a naive-merge conflict, and conflict rate by first-turn plan (95% Wilson)",
         f"{note} {LABEL_NOTE}"),
        ("scaling", scaling, "Coop success by number of agents (appendix F; 95% Wilson)", note),
    )
    judgments = pd.DataFrame() if judgments is None else judgments
    judged = cooper_comm_rates.judged_rates(runs, judgments)
    judge_note = cooper_comm_rates.judge_note(judgments if not judged.empty else pd.DataFrame())
    if not judged.empty:
        tables += (("communication_errors_judged", judged, "Communication errors by LLM judge (appendix J, Figure 5): "
                    f"{', '.join(judged['judge_model'].astype(str).unique())}", f"{note} {judge_note}"),)
    written: list[Path] = []
    index = ["# CooperBench report", "", f"Results: `{source}`." if source else "", "", note, ""]
    for name, frame, title, table_note in tables:
        written += write_table(frame, out, name, title, table_note)
        index.append(f"- [{title}]({name}.md) ([csv]({name}.csv))")
    if judged.empty:
        index.append(f"- {judge_note}")
    for name, build, data, fig_note in (
            ("fig_success", cooper_figures.success_figure, success, note),
            ("fig_difficulty", cooper_figures.difficulty_figure, curves, d_note),
            ("fig_conflicts", cooper_figures.conflict_figure, conflicts, note),
            ("fig_communication", cooper_figures.communication_figure, comm, LABEL_NOTE),
            ("fig_scaling", cooper_figures.scaling_figure, scaling, note)):
        written += build(data, out / f"{name}.png", fig_note)
        index.append(f"- ![{name}]({name}.png) ([pdf]({name}.pdf))")
    used = cooper.cooper_runs(runs)
    for run_id in cooper_timeline.pick_runs(used):
        try:
            written += cooper_timeline.timeline_figure(events, used.set_index("run_id", drop=False).loc[run_id],
                                                       out / f"timeline_{run_id}.png")
            index.append(f"- Timeline of run {run_id}: ![timeline](timeline_{run_id}.png)")
        except ValueError as exc:  # a run without timed events: say so instead of an empty figure
            index.append(f"- No timeline: {exc}")
    (out / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return [out / "README.md", *written]


def write_report(results_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Load a results directory and write its CooperBench section to `out_dir`."""
    loaded = load_results(results_dir)
    return write_section(loaded.runs, loaded.events, out_dir, str(results_dir),
                         cooper_comm_rates.load_judgments(results_dir))


def main(argv: list[str] | None = None) -> int:
    return report_main("cooper_report", "CooperBench tables and figures from a results directory", write_report, argv)


if __name__ == "__main__":
    raise SystemExit(main())


def write_report_index_first(results_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """`write_report` with the index (README.md) first, as `masgrid report` lists a family's files."""
    files = write_report(results_dir, out_dir)
    index = next((p for p in files if p.name == "README.md"), files[0])
    return [index, *(p for p in files if p != index)]
