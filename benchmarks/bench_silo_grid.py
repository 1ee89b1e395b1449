"""SILO-Bench grid with the scripted backend: wall time, runs per minute, N=100 round overhead.

Runs every registered SILO task x N in {2,5,10,20,50,100} x {p2p, broadcast, kv} (the
paper's 540-run grid once all 30 tasks are registered) through Ray with the real driver
and recorder, then reads the runs table back and reports:
- total wall time and runs per minute;
- per N: mean run wall time (including actor start-up) and rounds;
- the N=100 round overhead per protocol: seconds between the event timestamps of
  consecutive rounds (all agents stepped, replies applied, events recorded), which is the
  platform's cost per lockstep round since scripted agents think in microseconds.

    PYTHONPATH=. RAY_AUTH_MODE=disabled python benchmarks/bench_silo_grid.py --out /tmp/silo-grid
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

SCALES = (2, 5, 10, 20, 50, 100)
PROTOCOLS = ("p2p", "broadcast", "kv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/masgrid-bench-silo")
    parser.add_argument("--concurrency", type=int, default=4, help="drivers in flight")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all registered)")
    parser.add_argument("--scales", default=",".join(map(str, SCALES)))
    parser.add_argument("--num-cpus", type=int, default=None)
    parser.add_argument("--report-only", action="store_true", help="only summarise an existing --out")
    parser.add_argument("--fresh-actors", action="store_true",
                        help="start new hosts for every run instead of borrowing warm ones (as sweeps do)")
    args = parser.parse_args()
    if args.report_only:
        summarise(Path(args.out))
        return

    from masgrid.families.silo.catalog import SILO_SPECS
    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.cluster.ray_session import ensure_ray

    from masgrid._private.platform.sweeps.ray_runs import run_many
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    tasks = [f"silo/{t}" for t in (args.tasks.split(",") if args.tasks else sorted(SILO_SPECS))]
    scales = [int(s) for s in args.scales.split(",")]
    execution = {"reuse_actors": not args.fresh_actors}
    cfgs = [RunConfig.from_mapping({"task": t, "protocol": p, "agents": n, "results_dir": str(out),
                                    "execution": execution})
            for t in tasks for n in scales for p in PROTOCOLS]
    ensure_ray(None, num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    t0 = time.perf_counter()
    summaries = run_many(cfgs, max_concurrent=args.concurrency)
    wall = time.perf_counter() - t0
    report = {
        "tasks": len(tasks), "runs": len(cfgs), "ok": sum(s.status == "ok" for s in summaries),
        "success": sum(bool(s.success) for s in summaries), "wall_s": round(wall, 1),
        "runs_per_minute": round(60 * len(cfgs) / wall, 1), "concurrency": args.concurrency,
        "reuse_actors": not args.fresh_actors,
    }
    print(json.dumps(report, indent=2))
    summarise(out)


def summarise(out: Path) -> None:
    from masgrid._private.analysis.load import load_results

    res = load_results(out)
    runs = res.runs
    by_n = runs.groupby("agents").agg(runs=("run_id", "count"), success=("success", "mean"),
                                      wall_s=("wall_s", "mean"), rounds=("rounds", "mean"))
    print(by_n.round(3).to_string())
    big = runs[runs["agents"] == runs["agents"].max()]
    ev = res.events[res.events["run_id"].isin(big["run_id"])]
    starts = ev.groupby(["run_id", "round"])["time"].min().reset_index().sort_values(["run_id", "round"])
    starts["round_s"] = starts.groupby("run_id")["time"].diff().dt.total_seconds()
    per_run = starts.groupby("run_id")["round_s"].mean().rename("round_s")
    table = big.set_index("run_id").join(per_run).groupby("protocol").agg(
        runs=("wall_s", "count"), wall_s=("wall_s", "mean"), rounds=("rounds", "mean"),
        round_s=("round_s", "mean"), round_s_max=("round_s", "max"))
    print(f"N={int(big['agents'].max())} round overhead per protocol (seconds between consecutive rounds):")
    print(table.round(3).to_string())


if __name__ == "__main__":
    main()
