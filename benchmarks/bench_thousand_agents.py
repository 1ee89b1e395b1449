"""1,000-agent runs through the HTTP backend: round overhead and memory per agent.

AgentsNet consensus on a 1,000-node Watts-Strogatz graph and SILO I-01 over P2P with
N = 1,000, with `backend=openai` against the zero-latency loopback server
(benchmarks/zero_latency_server.py), so every call is a real HTTP exchange and the
model costs nothing. Reported per run:

- `overhead_s` per round: the time from one round's last event to the next round's last
  event, less the slowest call of that round (`latency_s`): what the platform adds to a
  round of 1,000 calls beyond waiting for its slowest call (median over rounds 2.., and
  the worst round);
- `peak_mb`: peak RSS of this process and every Ray process it started, above the idle
  cluster, and that divided by N (`mb_per_agent`);
- calls, wall time and start-up.

    python benchmarks/bench_thousand_agents.py --out benchmarks/results/thousand_agents.md
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from bench_agentsnet import Peak
from bench_harness_per_call import Server, config

SCENARIOS = {
    "agentsnet1000": {"task": "agentsnet/consensus", "protocol": "local", "agents": 1000, "graph": "ws"},
    "silo1000": {"task": "silo/I-01", "protocol": "p2p", "agents": 1000, "max_rounds": 10},
}


def one(name: str, server: Server, results: Path, seed: int, client: str) -> dict:
    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_one

    data = config("an100", server, results, seed, client)
    data.update(SCENARIOS[name])
    cfg = RunConfig.from_mapping(data)
    t0 = time.perf_counter()
    with Peak(with_children=True) as rss:
        summary = run_one(cfg)
    wall = time.perf_counter() - t0
    if summary.status != "ok":
        raise RuntimeError(f"{name}: {summary.status}: {summary.error}")
    run = pd.read_parquet(results / "runs", filters=[("run_id", "==", cfg.run_id)]).iloc[0]
    events = pd.read_parquet(results / "events", columns=["run_id", "round", "kind", "time", "latency_s"],
                             filters=[("run_id", "==", cfg.run_id)])
    ends = events.groupby("round")["time"].max().sort_index()
    slowest = events[events["kind"] == "model_call"].groupby("round")["latency_s"].max()
    span = ends.diff().dt.total_seconds().iloc[1:]
    overhead = (span - slowest.reindex(span.index)).dropna()
    n = int(run["agents"])
    return {"scenario": name, "seed": seed, "client": client, "agents": n, "calls": int(run["model_calls"]),
            "rounds": int(len(ends)), "startup_s": float(run["startup_s"]), "run_wall_s": float(run["wall_s"]),
            "command_wall_s": wall, "round_s_median": float(span.median()),
            "slowest_call_s_median": float(slowest.median()),
            "overhead_s_median": float(overhead.median()), "overhead_s_max": float(overhead.max()),
            "peak_mb": rss.peak - rss.base, "mb_per_agent": (rss.peak - rss.base) / n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--client", default="direct", choices=["direct", "aiohttp", "httpx"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from masgrid._private.platform.cluster.ray_session import ensure_ray

    server = Server()
    rows = []
    try:
        ensure_ray(None, num_cpus=2, include_dashboard=False, log_to_driver=False)
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(args.repeats):
                for name in args.scenarios:
                    row = one(name, server, Path(tmp) / f"r{rep}", rep, args.client)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    finally:
        server.close()
    df = pd.DataFrame(rows)
    table = df.groupby("scenario", sort=False).median(numeric_only=True).reset_index().round(3)
    text = table.to_markdown(index=False)
    print(text)
    if args.out:
        load = os.getloadavg()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"# 1,000-agent runs over HTTP ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
                            f"load {load[0]:.1f} at the end, client {args.client}; medians of {args.repeats})\n\n"
                            f"{text}\n")


if __name__ == "__main__":
    main()
