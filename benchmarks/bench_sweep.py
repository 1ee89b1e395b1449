"""Throughput of a scripted sweep (runs per minute) against the concurrency bound.

    PYTHONPATH=. python benchmarks/bench_sweep.py --runs 200 --concurrency 8,4,2,1

Each level runs the same grid (sorting, scripted agents, N in 1..4, K in {1, 2}, the three
protocols, distinct seeds) into a fresh results_dir through `masgrid._private.platform.sweeps.sweep.run_sweep`,
the code path of `masgrid run -m` after Hydra composition, on one local Ray instance
started once. Reported: wall time of the sweep, runs/minute, and the mean wall time of
one run as recorded in the runs table. Results go to stdout as a Markdown table and to
--json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

import pandas as pd

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.cluster.ray_session import ensure_ray
from masgrid._private.platform.sweeps.sweep import SweepSettings, run_sweep


def grid(n_runs: int, results_dir: str) -> list[RunConfig]:
    points = itertools.product(range(1000), ("broadcast", "p2p", "kv"), (1, 2, 3, 4), (1, 2))
    cfgs = [RunConfig(task="sorting", protocol=p, agents=n, k=k, seed=s, results_dir=results_dir)
            for s, p, n, k in itertools.islice(points, n_runs)]
    assert len({c.run_id for c in cfgs}) == n_runs
    return cfgs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--concurrency", default="8,4,2,1")
    ap.add_argument("--reuse", default="on,off", help="warm host pool (sweep.reuse_actors): on, off or both")
    ap.add_argument("--json", type=Path, default=None)
    ns = ap.parse_args()
    ensure_ray(None, include_dashboard=False, configure_logging=False, log_to_driver=False)
    rows = []
    levels = [(int(c), r == "on") for c in ns.concurrency.split(",") for r in ns.reuse.split(",")]
    for level, reuse in levels:
        with tempfile.TemporaryDirectory(prefix=f"bench_sweep_c{level}_") as tmp:
            cfgs = grid(ns.runs, tmp)
            t0 = time.perf_counter()
            result = run_sweep(cfgs, SweepSettings(max_concurrent=level, progress="off", reuse_actors=reuse))
            wall = time.perf_counter() - t0
            runs = pd.read_parquet(Path(tmp) / "runs")
            rows.append({"max_concurrent": level, "reuse_actors": reuse, "runs": result.ran, "failed": result.failed, "wall_s": round(wall, 1),
                         "runs_per_min": round(result.ran / wall * 60, 1),
                         "mean_run_wall_s": round(float(runs["wall_s"].mean()), 2)})
            print(json.dumps(rows[-1]), flush=True)
    print("\n" + pd.DataFrame(rows).to_markdown(index=False))
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
