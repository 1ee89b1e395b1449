"""The family's report: success and mean error by N."""

from __future__ import annotations

from pathlib import Path

import masgrid


def write_report(results_dir: str | Path, out: str | Path) -> list[Path]:
    runs = masgrid.load_results(results_dir).runs
    runs = runs[runs["task"].str.startswith("relay/")]
    if runs.empty:
        raise ValueError("no relay runs")
    table = runs.groupby("agents").agg(runs=("run_id", "count"), success=("success", "mean"),
                                       mean_error=("relay_mean_error", "mean"))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "success_by_n.csv").write_text(table.to_csv(), encoding="utf-8")
    index = out / "README.md"
    index.write_text("# Relay\n\nSuccess and mean error by N\n\n" + table.to_markdown() + "\n", encoding="utf-8")
    return [index, out / "success_by_n.csv"]
