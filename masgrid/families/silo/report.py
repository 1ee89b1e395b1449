"""Write every SILO-Bench table and figure of a results directory to a folder.

    python -m masgrid.families.silo.report RESULTS_DIR OUT_DIR [--heatmaps N]

Produces README.md (which runs the tables use and which they left out, analysis/usable_runs.py),
one CSV per table (table1.csv ... table18.csv, table4/15/16/17 from the failure
analysis, labels.csv with the per-run failure labels) and Figure-7 heatmaps of the N
largest-N runs of each protocol, so the paper's artefacts come out of one command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from masgrid.families.silo import failures as sf
from masgrid.families.silo import tables as st
from masgrid.families.silo.common import level_of, silo_runs
from masgrid.sdk.results import exclusion_note, load_results


def write_report(results_dir: str | Path, out_dir: str | Path, heatmaps: int = 1) -> list[Path]:
    res = load_results(results_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(name: str, table: pd.DataFrame) -> None:
        path = out / f"{name}.csv"
        table.to_csv(path)
        written.append(path)

    runs = res.runs
    family = runs[runs["task"].map(level_of).notna()] if not runs.empty else runs
    note = out / "README.md"
    note.write_text(f"# SILO-Bench tables\n\nRuns from `{results_dir}`: {exclusion_note(family)}\n", encoding="utf-8")
    written.append(note)
    for name in ("table1", "table2", "table3", "table10", "table11", "table12", "table13", "table18"):
        save(name, getattr(st, name)(runs))
    labels = sf.label_runs(runs, res.agents, res.events)
    if not labels.empty:
        save("labels", labels)
        save("table4", sf.failure_distribution(labels))
        save("table15", sf.cooccurrence(labels))
        save("table16", sf.behaviour_table(labels, res.events))
        save("table17", sf.leader_table(labels))
    multi = silo_runs(runs)
    multi = multi[multi["oracle_n"].isna()].sort_values(["agents", "run_id"], ascending=[False, True])
    for protocol, group in multi.groupby("protocol"):
        for run in group.head(heatmaps).itertuples():
            title = f"{run.task} {protocol} N={run.agents}"
            written.append(sf.heatmap_png(res.events, run.run_id, int(run.agents),
                                          out / f"heatmap-{run.task.replace('/', '_')}-{protocol}-{run.agents}.png",
                                          title))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SILO-Bench tables and figures from a results directory")
    parser.add_argument("results_dir")
    parser.add_argument("out_dir")
    parser.add_argument("--heatmaps", type=int, default=1, help="heatmaps per protocol (largest N first)")
    ns = parser.parse_args(argv)
    for path in write_report(ns.results_dir, ns.out_dir, ns.heatmaps):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
