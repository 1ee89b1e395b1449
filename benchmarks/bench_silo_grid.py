"""SILO-Bench grid with the scripted backend: wall time, runs per minute, N=100 round overhead.

Runs every registered SILO task x N in {2,5,10,20,50,100} x {p2p, broadcast, kv} (the
paper's 540-run grid once all 30 tasks are registered) through Ray with the real driver
and recorder, then reads the runs table back and reports:
- total wall time and runs per minute;
- per N: mean run wall time, rounds, and seconds per round (the platform's overhead per
  lockstep round, since scripted agents think in microseconds), with N=100 per protocol.

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
    args = parser.parse_args()

    from masgrid.analysis.load import load_results
    from masgrid.envs.tasks.silo import SILO_SPECS
    from masgrid.platform.config import RunConfig
    from masgrid.platform.launch import ensure_ray, run_many

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    tasks = [f"silo/{t}" for t in (args.tasks.split(",") if args.tasks else sorted(SILO_SPECS))]
    scales = [int(s) for s in args.scales.split(",")]
    cfgs = [RunConfig.from_mapping({"task": t, "protocol": p, "agents": n, "results_dir": str(out)})
            for t in tasks for n in scales for p in PROTOCOLS]
    ensure_ray(None, num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    t0 = time.perf_counter()
    summaries = run_many(cfgs, max_concurrent=args.concurrency)
    wall = time.perf_counter() - t0
    runs = load_results(out).runs
    runs["s_per_round"] = runs["wall_s"] / runs["rounds"]
    by_n = runs.groupby("agents").agg(runs=("run_id", "count"), success=("success", "mean"),
                                      wall_s=("wall_s", "mean"), rounds=("rounds", "mean"),
                                      s_per_round=("s_per_round", "mean"))
    n100 = runs[runs["agents"] == 100].groupby("protocol").agg(wall_s=("wall_s", "mean"),
                                                               rounds=("rounds", "mean"),
                                                               s_per_round=("s_per_round", "mean"))
    report = {
        "tasks": len(tasks), "runs": len(cfgs), "ok": sum(s.status == "ok" for s in summaries),
        "success": sum(bool(s.success) for s in summaries), "wall_s": round(wall, 1),
        "runs_per_minute": round(60 * len(cfgs) / wall, 1), "concurrency": args.concurrency,
    }
    print(json.dumps(report, indent=2))
    print(by_n.round(3).to_string())
    print("N=100 per protocol:")
    print(n100.round(3).to_string())


if __name__ == "__main__":
    main()
