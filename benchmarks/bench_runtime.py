"""Harness overhead of the Ray runtime with scripted agents (no model time).

For N in {10, 100} and several packings of agents into AgentHost actors, measures:
- start-up: driver start until environment + agent actors are ready (runs.startup_s);
- per-round overhead: (wall - start-up) / rounds executed, i.e. the cost of one lockstep
  round (Ray calls, protocol, events, Parquet flushes) when the model answers instantly;
- peak memory: summed RSS of all Ray processes during the run, above the idle cluster;
- "(pooled)": hosts borrowed from the warm pool (`execution.reuse_actors=true`); the first
  repeat starts them, later repeats reuse them, so the median shows the warm cost.
Configurations are interleaved and repeated; medians are reported.

    python benchmarks/bench_runtime.py --repeats 3 --out benchmarks/results/runtime.md
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.cluster.ray_session import ensure_ray


from masgrid._private.platform.sweeps.ray_runs import run_local, run_one
def ray_rss_mb() -> float:
    """RSS of this benchmark's own Ray cluster: ray.init started GCS, raylet and every
    worker as descendants of this process (other Ray clusters on the box are excluded)."""
    total = 0
    for p in psutil.Process().children(recursive=True):
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total / 2**20


class PeakSampler:
    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, ray_rss_mb())
            time.sleep(0.05)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def one(n: int, per_actor: int | None, results: Path, seed: int, pooled: bool = False) -> dict:
    executor = "local" if per_actor is None else "ray"
    cfg = RunConfig.from_mapping(dict(task="sorting", protocol="broadcast", agents=n, k=10, mode="random",
                                      condition="base", seed=seed, results_dir=str(results),
                                      execution={"executor": executor, "agents_per_actor": per_actor or 1,
                                                 "reuse_actors": pooled}))
    baseline = ray_rss_mb()
    with PeakSampler() as sampler:
        summary = (run_local if per_actor is None else run_one)(cfg)
    assert summary.status == "ok" and summary.success, summary
    row = pd.read_parquet(results / "runs", filters=[("run_id", "==", cfg.run_id)]).iloc[0]
    rounds = int(row["rounds_phase1"])
    label = "in-process" if per_actor is None else f"{per_actor}{' (pooled)' if pooled else ''}"
    return {"N": n, "agents_per_actor": label,
            "actors": 0 if per_actor is None else -(-n // per_actor) + 2,
            "startup_s": float(row["startup_s"]), "round_ms": 1000 * (row["wall_s"] - row["startup_s"]) / rounds,
            "wall_s": float(row["wall_s"]), "peak_mb": sampler.peak - baseline}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    ensure_ray(None, include_dashboard=False, log_to_driver=False)
    plan = [(10, 1, False), (10, 10, False), (10, 10, True), (10, None, False), (100, 1, False), (100, 10, False),
            (100, 25, False), (100, 100, False), (100, 100, True), (100, None, False)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for n, per, pooled in plan:
                rows.append(one(n, per, Path(tmp), seed=rep, pooled=pooled))
    df = pd.DataFrame(rows)
    med = (df.groupby(["N", "agents_per_actor", "actors"], sort=False)
             .median(numeric_only=True).reset_index().round({"startup_s": 2, "round_ms": 1, "wall_s": 2, "peak_mb": 0}))
    text = med.to_markdown(index=False)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"median of {args.repeats} interleaved repeats, sorting/broadcast K=10, scripted\n\n{text}\n")


if __name__ == "__main__":
    main()
