"""Runs an adaptive sweep needs against a fixed-repeat sweep that reaches the same interval width.

    PYTHONPATH=. RAY_AUTH_MODE=disabled python benchmarks/bench_adaptive.py --repeats 3 --sim 2000

Grid: AgentsNet colouring, 4 agents on small-world graphs, round budget T in {2, 3, 4, 6}:
the randomized classical policy (seeded by the run seed, as is the graph) colours the graph
properly on some seeds and not on others, so `success` is a noisy yes/no outcome whose rate
rises with T. Rule: `sweep.adaptive.width` (Wilson interval at 95 %).

Real sweeps (`--repeats`, each from its own seed_start): one adaptive sweep through
`masgrid.sweep`, then the fixed sweep that guarantees the same width whatever the success rate
(n_fixed seeds per cell: the smallest n whose widest Wilson interval, over every count of
successes, is within the target), in the same results_dir, so it reuses the adaptive runs and
runs only the rest. Reported per repeat: runs of each, their ratio, the hindsight fixed n (the
smallest common n at which every cell of this repeat's recorded streams was within the target).

Simulation (`--sim` repeats, `masgrid._private.platform.sweeps.adaptive.simulate`, the sweep's own
decision code): Bernoulli streams at each cell's success rate estimated from every run
recorded; median runs of the adaptive rule against n_fixed, and the coverage of the Wilson
interval after optional stopping. The same for the paired SPRT (`compare`): its type I error
(equal rates) and power (rates of cells T=2 and T=4), and its median runs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

import masgrid
from masgrid._private.analysis.cells import read_cells
from masgrid._private.platform.sweeps.adaptive import simulate
from masgrid._private.platform.sweeps.stopping import AdaptiveSettings, interval

BASE = ("task=agentsnet/coloring", "graph=ws", "agents=4")
ROUNDS = (2, 3, 4, 6)


def widest_wilson(n: int, confidence: float) -> float:
    return max(interval([1.0] * k + [0.0] * (n - k), True, confidence)[2]
               - interval([1.0] * k + [0.0] * (n - k), True, confidence)[1] for k in range(n + 1))


def fixed_n(width: float, confidence: float) -> int:
    """Seeds per cell a fixed sweep needs so that every cell's interval is within `width`."""
    n = 2
    while widest_wilson(n, confidence) > width:
        n += 1
    return n


def hindsight_n(streams: list[list[float]], width: float, confidence: float) -> int | None:
    """Smallest common n at which every recorded stream's interval is within `width`."""
    for n in range(2, min(len(s) for s in streams) + 1):
        if all(interval(s[:n], True, confidence)[2] - interval(s[:n], True, confidence)[1] <= width for s in streams):
            return n
    return None


def real_repeat(root: Path, repeat: int, rule: AdaptiveSettings, n_fixed: int, concurrency: int) -> dict:
    results = root / f"repeat{repeat}"
    results.mkdir()
    rule = rule.model_copy(update={"seed_start": 1000 * repeat})
    t0 = time.perf_counter()
    adaptive = masgrid.sweep({"agentsnet__rounds": list(ROUNDS)}, *BASE, f"results_dir={results}",
                             adaptive=rule.model_dump(), max_concurrent=concurrency, progress="off")
    t_adaptive = time.perf_counter() - t0
    cells = read_cells(results)
    t0 = time.perf_counter()
    fixed = masgrid.sweep({"agentsnet__rounds": list(ROUNDS), "seed": range(rule.seed_start, rule.seed_start + n_fixed)},
                          *BASE, f"results_dir={results}", max_concurrent=concurrency, progress="off")
    t_fixed_rest = time.perf_counter() - t0
    runs = pd.read_parquet(results / "runs")
    runs["budget"] = [json.loads(c)["agentsnet"]["rounds"] for c in runs["config_json"]]
    streams = [runs[runs["budget"] == t].sort_values("seed")["success"].astype(float).tolist() for t in ROUNDS]
    adaptive_runs = int(cells["n_seeds"].sum())
    return {"repeat": repeat, "seed_start": rule.seed_start, "adaptive_runs": adaptive_runs,
            "fixed_runs": n_fixed * len(ROUNDS), "ratio": adaptive_runs / (n_fixed * len(ROUNDS)),
            "hindsight_fixed_n": hindsight_n(streams, rule.width or 0, rule.confidence),
            "adaptive_wall_s": round(t_adaptive, 1), "fixed_extra_runs": fixed.ran,
            "fixed_extra_wall_s": round(t_fixed_rest, 1), "failed": adaptive.failed + fixed.failed,
            "cells": [{"cell": r.cell, "n": int(r.n_seeds), "estimate": r.estimate, "ci_low": r.ci_low,
                       "ci_high": r.ci_high, "reason": r.reason} for r in cells.sort_values("cell").itertuples()],
            "streams": streams}


def simulated(rates: list[float], rule: AdaptiveSettings, n_fixed: int, repeats: int, seed: int) -> dict:
    rng = random.Random(seed)
    totals, covered, trials = [], 0, 0
    for _ in range(repeats):
        streams = [[float(rng.random() < p) for _ in range(rule.max_seeds)] for p in rates]
        decisions = simulate(streams, rule)
        totals.append(sum(n for n, _ in decisions))
        for p, stream, (n, _) in zip(rates, streams, decisions):
            _, low, high = interval(stream[:n], True, rule.confidence)
            covered += low <= p <= high
            trials += 1
    return {"rates": rates, "median_adaptive_runs": statistics.median(totals), "fixed_runs": n_fixed * len(rates),
            "median_ratio": statistics.median(totals) / (n_fixed * len(rates)),
            "coverage_after_stopping": covered / trials, "nominal": rule.confidence}


def simulated_sprt(p_a: float, p_b: float, rule: AdaptiveSettings, repeats: int, seed: int) -> dict:
    rng = random.Random(seed)
    reasons: dict[str, int] = {}
    runs = []
    for _ in range(repeats):
        a = [float(rng.random() < p_a) for _ in range(rule.max_seeds)]
        b = [float(rng.random() < p_b) for _ in range(rule.max_seeds)]
        (n, reason), _ = simulate([a, b], rule)
        reasons[reason] = reasons.get(reason, 0) + 1
        runs.append(2 * n)
    return {"p_a": p_a, "p_b": p_b, "separated": reasons.get("separated", 0) / repeats,
            "not_separated": reasons.get("not_separated", 0) / repeats,
            "max_seeds": reasons.get("max_seeds", 0) / repeats, "median_runs": statistics.median(runs),
            "fixed_runs": 2 * rule.max_seeds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="real sweeps, each from its own seed_start")
    ap.add_argument("--sim", type=int, default=2000, help="simulated repeats")
    ap.add_argument("--width", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--json", default="benchmarks/results/adaptive.json")
    args = ap.parse_args()
    rule = AdaptiveSettings(width=args.width, min_seeds=5, batch=5, max_seeds=60)
    n_fixed = fixed_n(args.width, rule.confidence)
    out: dict = {"rule": rule.rule(), "n_fixed": n_fixed, "real": [], "simulated": {}, "sprt": []}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            row = real_repeat(Path(tmp), repeat, rule, n_fixed, args.concurrency)
            print(json.dumps({k: v for k, v in row.items() if k != "streams"}), flush=True)
            out["real"].append(row)
    pooled = [sum(sum(r["streams"][i]) for r in out["real"]) / sum(len(r["streams"][i]) for r in out["real"])
              for i in range(len(ROUNDS))] if out["real"] else [0.1, 0.4, 0.6, 0.9]
    out["simulated"] = simulated(pooled, rule, n_fixed, args.sim, seed=7)
    sprt = AdaptiveSettings(compare="agentsnet.rounds", min_seeds=5, batch=5, max_seeds=60)
    out["sprt_rule"] = sprt.rule()
    for p_a, p_b in [(pooled[1], pooled[1]), (pooled[2], pooled[2]), (pooled[0], pooled[2]), (pooled[1], pooled[3])]:
        out["sprt"].append(simulated_sprt(p_a, p_b, sprt, args.sim, seed=11))
    if out["real"]:
        out["median_real_ratio"] = statistics.median(r["ratio"] for r in out["real"])
        out["median_real_adaptive_runs"] = statistics.median(r["adaptive_runs"] for r in out["real"])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "real"}, indent=1, default=float))


if __name__ == "__main__":
    main()
