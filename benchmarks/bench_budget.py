"""What a sweep budget costs the sweep: reading the recorded spend at the start, and the gate's
work per run (reading the finished run's row, asking whether the next one fits).

A results_dir is filled with N runs rows of a scripted MAS-Bench grid (one real run's token
counts, the other columns each run's own), one Parquet file per run as the recorder writes
them. Then:
- `resume scan, for comparison`: what every resume reads already (sweep.recorded_status);
- `include (grid)`: SweepBudget.include over the N runs as a resume sees them (all recorded);
- `include (other seeds)`: the same rows read as runs of the same cells outside the grid (a
  plan over new seeds), which validates each row's config to find its cell;
- `per run`: finished (one row read) + may_start with 32 runs in flight, per run;
- `pass over the queue`: may_start for each of N queued runs (what the launcher asks after
  every finished run while the budget holds runs back).

    PYTHONPATH=. python benchmarks/bench_budget.py [--runs 1000] [--repeat 3] [--out benchmarks/results/budget.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from masgrid._private.platform.sweeps.budget import BudgetSettings, SweepBudget
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import Recorder
from masgrid._private.platform.sweeps.sweep import recorded_status


def grid(results_dir: Path, seeds: range) -> list[RunConfig]:
    return [RunConfig.from_mapping({"agents": a, "k": 1, "seed": s, "results_dir": str(results_dir)})
            for a in (2, 4) for s in seeds]


def fill(results_dir: Path, cfgs: list[RunConfig]) -> None:
    """One runs row per config, with a real run's token counts."""
    probe = RunConfig.from_mapping({"agents": 2, "k": 1, "seed": 0, "results_dir": str(results_dir / "probe"),
                                    "execution": {"executor": "local"}})
    run_local(probe)
    import pandas as pd

    row = pd.read_parquet(results_dir / "probe" / "runs").iloc[0]
    recorder = Recorder(results_dir)
    for cfg in cfgs:
        recorder.finish_run({**cfg.columns(), "status": "ok", "tokens_in": int(row["tokens_in"]),
                             "tokens_out": int(row["tokens_out"])}, [], cfg.partition)


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    half = args.runs // 2
    rows: dict[str, list[float]] = {"resume scan, for comparison": [], "include (grid)": [], "include (other seeds)": [], "per run": [],
                                    "pass over the queue": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "res"
        recorded = grid(root, range(half))
        fill(root, recorded)
        others = grid(root, range(half, 2 * half))  # the same cells, seeds not recorded
        for _ in range(args.repeat):
            rows["resume scan, for comparison"].append(seconds(lambda: recorded_status(str(root))))
            budget = SweepBudget(BudgetSettings(tokens=10**12))
            rows["include (grid)"].append(seconds(lambda b=budget: b.include(recorded)))
            fresh = SweepBudget(BudgetSettings(tokens=10**12))
            rows["include (other seeds)"].append(seconds(lambda b=fresh: b.include(others)))
            for cfg in others[:32]:
                budget.started(cfg)

            def gate(b: SweepBudget = budget) -> None:
                for cfg in recorded[:200]:
                    b.finished(cfg, None)
                    b.may_start(cfg)

            rows["per run"].append(seconds(gate) / 200)
            rows["pass over the queue"].append(seconds(lambda b=fresh: [b.may_start(c) for c in others]))
    load = os.getloadavg()[0]
    lines = [f"# sweep.budget overhead ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, load average {load:.1f})",
             "", f"{args.runs} recorded runs (2 cells), medians of {args.repeat}.", "",
             "| step | median | per run of the N |", "|---|---|---|"]
    for name, values in rows.items():
        median = statistics.median(values)
        per = "" if name == "per run" else f"{median / args.runs * 1e3:.3f} ms"
        lines.append(f"| {name} | {median * 1e3:.1f} ms | {per} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
