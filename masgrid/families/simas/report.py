"""Write every SIMAS table and figure of a results directory to a folder.

    python -m masgrid.families.simas.report RESULTS_DIR OUT_DIR

README.md says which runs were used and which left out (analysis/usable_runs.py); tables as
Markdown and CSV: accuracy per cell (mean, std over repeats, tokens per question), n* and
Definition 4 per family, Table 4 (profile ablations), CoT against SIMAS, and the judge's
win rates and scores on generation questions (`masgrid judge`); figures: the inverted U,
accuracy against tokens, CoT against SIMAS, the judge's bars.
"""

from __future__ import annotations

from pathlib import Path

from masgrid.families.simas import analysis as simas
from masgrid.families.simas import figures as simas_figures
from masgrid.sdk.reports import report_main
from masgrid.sdk.results import exclusion_note, load_results, write_table


def write_report(results_dir: str | Path, out_dir: str | Path) -> list[Path]:
    runs = load_results(results_dir).runs
    family = runs[runs["task"].astype(str).str.startswith("simas/")] if not runs.empty else runs
    if family.empty:
        raise ValueError(f"no SIMAS runs recorded under {results_dir}")
    out = Path(out_dir)
    note = f"Runs: {exclusion_note(family)}"
    written: list[Path] = []
    index = ["# SIMAS report", "", f"Results: `{results_dir}`.", "", note, ""]
    for name, frame, title in (
            ("accuracy", simas.accuracy_table(family), "Accuracy (%) per cell: mean, population std and standard "
             "error (sample SD / sqrt(repeats)) over repeats, tokens per question, unparsable final answers"),
            ("optimum", simas.optimum(family), "n* (arg-max accuracy) and Definition 4 (sufficiently driven) per "
             "model, task, subject, condition and T"),
            ("table4", simas.ablation_table(family), "Table 4: ALL minus each profile ablation (accuracy and std, "
             "points; mean over n in {2, 4, 6, 8})"),
            ("cot", simas.cot_comparison(family), "CoT against SIMAS: accuracy (%) per model and task")):
        written += write_table(frame, out, name, title, note)
        index.append(f"- [{title}]({name}.md) ([csv]({name}.csv))")
    for name, build in (("inverted_u", simas_figures.inverted_u), ("accuracy_tokens", simas_figures.accuracy_vs_tokens),
                        ("cot_vs_simas", simas_figures.cot_vs_simas)):
        written.append(build(family, out / f"{name}.png", note=note))
        index.append(f"- ![{name}]({name}.png)")
    judgments = simas.load_judgments(results_dir)
    judge_note = simas.judge_note(judgments)
    title = ("SIMAS against CoT on generation questions: win rate (% of judged pairs; a blind judge, both "
             "orders, a win needs both) and mean score (sum over criteria)")
    written += write_table(simas.judge_table(judgments), out, "judge", title, judge_note)
    written.append(simas_figures.judge_bars(judgments, out / "judge.png", note=judge_note))
    index += [f"- [{title}](judge.md) ([csv](judge.csv)); {judge_note}", "- ![judge](judge.png)"]
    (out / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return [out / "README.md", *written]


def main(argv: list[str] | None = None) -> int:
    return report_main("simas_report", "SIMAS tables and figures from a results directory", write_report, argv)


if __name__ == "__main__":
    raise SystemExit(main())
