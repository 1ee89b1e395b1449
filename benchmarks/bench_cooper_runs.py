"""Whole CooperBench runs with scripted agents on the synthetic pool: where a run's time goes.

    PYTHONPATH=. python benchmarks/bench_cooper_runs.py [--pairs 1,3 4,5] [--settings coop solo nocomm]
                                                         [--sandbox bwrap] [--repeats 1]

Runs in one process (execution.executor=local), one run at a time, so the figures are per
run, not a sweep's throughput (`masgrid run -m sweep=cooper` measures that). Per run it
reports the wall time, the agents' tool loops (first to last event time `t` of the run's
events), the evaluation (`eval_wall_s`: merge and the sandboxed test runs) and the rest
(checkouts, recording). The first run also builds the task's test environment; it is
reported separately and left out of the medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import pandas as pd

from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import partition_dir


def one_run(pool, cache: Path, results: Path, features: list[int], setting: str, sandbox: str, seed: int) -> dict:
    cfg = RunConfig.from_mapping({
        "task": f"cooper/{pool.pool}/{pool.task_id}", "protocol": "workspace", "results_dir": str(results),
        "seed": seed, "execution": {"executor": "local"},
        "cooper": {"features": features, "setting": setting, "data_dir": str(pool.data_dir),
                   "repos_dir": str(pool.repos_dir), "cache_dir": str(cache), "sandbox": sandbox}})
    summary = run_local(cfg)
    if summary.status != "ok":
        raise SystemExit(f"run {cfg.run_id} {summary.status}: {summary.error}")
    runs = pd.read_parquet(partition_dir(results, "runs", cfg.partition))
    row = runs[runs.run_id == cfg.run_id].iloc[0]
    events = pd.read_parquet(partition_dir(results, "events", cfg.partition))
    t = events[events.run_id == cfg.run_id].t.dropna()
    loops = float(t.max() - t.min())
    return {"pair": ",".join(map(str, features)), "setting": setting, "wall_s": summary.wall_s, "loops_s": loops,
            "eval_s": float(row.eval_wall_s), "rest_s": summary.wall_s - loops - float(row.eval_wall_s),
            "success": bool(row.success), "merge_stage": row.merge_stage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", nargs="+", default=["1,3", "4,5", "1,2"])
    parser.add_argument("--settings", nargs="+", default=["coop", "nocomm", "solo"])
    parser.add_argument("--sandbox", default="bwrap", choices=["bwrap", "none"])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cooper-runs-") as tmp:
        root = Path(tmp)
        pool = write_synthetic_pool(root / "pool")
        first = one_run(pool, root / "cache", root / "warmup", [1, 3], "coop", args.sandbox, 99)
        print(f"first run (builds the test environment): {first['wall_s']:.2f} s")
        rows = [one_run(pool, root / "cache", root / "results", [int(x) for x in pair.split(",")], setting,
                        args.sandbox, seed)
                for seed in range(args.repeats) for pair in args.pairs for setting in args.settings]
    print("| pair | setting | merge_stage | success | wall s | tool loops s | evaluation s | rest s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pair']} | {r['setting']} | {r['merge_stage']} | {r['success']} | {r['wall_s']:.2f} | "
              f"{r['loops_s']:.3f} | {r['eval_s']:.2f} | {r['rest_s']:.2f} |")
    for key in ("wall_s", "loops_s", "eval_s", "rest_s"):
        print(f"median {key}: {statistics.median(r[key] for r in rows):.3f}")


if __name__ == "__main__":
    main()
