"""`masgrid report`: an overview of a results directory."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from masgrid.analysis.load import load_results

GROUP_KEYS = ["task", "protocol", "condition", "model", "agents", "k"]


def print_overview(results_dir: Path, console: Console | None = None) -> int:
    console = console or Console()
    res = load_results(results_dir)
    if res.runs.empty:
        console.print(f"no runs recorded under {results_dir}")
        return 1
    runs = res.runs
    ok = runs[runs["status"] == "ok"]
    keys = [k for k in GROUP_KEYS if k in runs.columns]
    agg = ok.groupby(keys, dropna=False).agg(runs=("run_id", "count"), success=("success", "mean"),
                                              sr=("sr", "mean"), rounds=("rounds", "mean"),
                                              te=("te", "mean"), cr=("cr", "mean")).reset_index()
    table = Table(title=f"{results_dir}: {len(runs)} runs, {int((runs['status'] != 'ok').sum())} failed")
    for col in agg.columns:
        table.add_column(col)
    for _, row in agg.iterrows():
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    console.print(table)
    return 0
