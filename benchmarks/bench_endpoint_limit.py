"""A sweep against a provider's rate limit: per-call retries against one shared adaptive limit.

    PYTHONPATH=. python benchmarks/bench_endpoint_limit.py --out benchmarks/results/endpoint_limit.md

The endpoint is a loopback server that behaves like a hosted API's rate limit
(tests/support/rate_limited_provider.py): every answer takes `--latency` seconds, and
beyond `--rate` requests in any one second it answers HTTP 429 with `Retry-After: 1`. The
workload is an AgentsNet sweep of N = 100 agents (`--runs` runs, `--in-flight` at once,
`agentsnet.rounds` = `--rounds`), `backend=openai`, preflight off so that the server sees
only the runs' calls. Two settings, alternating in one process (`--pairs` times):

- `per-call`: today's default, `model.max_connections` unset: each call retries on its own
  (`model.max_retries`, backoff or the server's Retry-After);
- `shared`: `model.max_connections=--ceiling`: one adaptive limit for the endpoint, shared
  by every run and process, and a Retry-After pauses the whole endpoint.

Reported per setting: wall time of the sweep, requests the server received, 429s, model
calls recorded, failed calls, run statuses, and the time calls spent queueing for the limit.
The lower bound of the wall time is calls / rate (the server's own limit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.cluster.ray_session import ensure_ray
from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.support.rate_limited_provider import RateLimitedProvider


def sweep(ns: argparse.Namespace, base_url: str, results: Path, ceiling: int | None) -> list[RunConfig]:
    model = {"name": "provider", "served_name": "test", "base_url": base_url, "timeout_s": 60,
             "http_client": "aiohttp", "max_connections": ceiling}
    return [RunConfig.from_mapping({
        "task": "agentsnet/coloring", "protocol": "local", "agents": ns.agents, "graph": "ws", "seed": seed,
        "agentsnet": {"rounds": ns.rounds}, "backend": "openai", "model": model, "preflight": False,
        "results_dir": str(results)}) for seed in range(ns.runs)]


def measure(ns: argparse.Namespace, ceiling: int | None, results: Path) -> dict[str, float | int | str]:
    with RateLimitedProvider(rate=ns.rate, latency_s=ns.latency, retry_after="1") as provider:
        cfgs = sweep(ns, provider.base_url, results, ceiling)
        start = time.perf_counter()
        summaries = run_many(cfgs, max_concurrent=ns.in_flight)
        wall = time.perf_counter() - start
    runs = pd.read_parquet(results / "runs")
    events = pd.read_parquet(results / "events", columns=["kind", "error_class", "queue_s"])
    calls = events[events["kind"] == "model_call"]
    statuses = runs["status"].value_counts().to_dict()
    return {"setting": "per-call" if ceiling is None else f"shared (max_connections={ceiling})",
            "wall_s": round(wall, 1), "requests": provider.log.requests, "refused_429": provider.log.refused,
            "refused_share": round(provider.log.refused / max(1, provider.log.requests), 3),
            "calls": len(calls), "failed_calls": int(calls["error_class"].notna().sum()),
            "runs": len(summaries), "statuses": json.dumps(statuses, sort_keys=True),
            "queue_s_total": round(float(calls["queue_s"].sum()), 1),
            "max_in_flight_at_server": provider.log.max_in_flight}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--rate", type=int, default=20, help="requests a second the provider accepts")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds each answer takes")
    parser.add_argument("--ceiling", type=int, default=32, help="model.max_connections of the shared setting")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()
    ensure_ray(None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(ns.pairs):
            for ceiling in (None, ns.ceiling):
                label = "per-call" if ceiling is None else "shared"
                row = measure(ns, ceiling, Path(tmp) / f"{label}-{pair}")
                row["pair"] = pair + 1
                print(json.dumps(row), flush=True)
                rows.append(row)
    lower = max(int(r["calls"]) for r in rows) / ns.rate  # every call answered once, at the provider's rate
    lines = [f"# Endpoint limit: AgentsNet N = {ns.agents} against a rate-limited endpoint",
             "", f"`{' '.join(sys.argv)}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Provider: {ns.rate} requests/s, {ns.latency} s per answer, 429 with Retry-After: 1 beyond the rate. "
             f"Workload: {ns.runs} runs, {ns.in_flight} in flight, agentsnet.rounds={ns.rounds}. About "
             f"{lower:.0f} s is the floor the rate sets (the most model calls recorded / rate).",
             "", "| pair | setting | wall s | requests | 429s | share refused | calls | failed calls | run statuses "
             "| queue s (sum) | most in flight at server |", "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['pair']} | {r['setting']} | {r['wall_s']} | {r['requests']} | {r['refused_429']} | "
                     f"{r['refused_share']} | {r['calls']} | {r['failed_calls']} | {r['statuses']} | "
                     f"{r['queue_s_total']} | {r['max_in_flight_at_server']} |")
    for key in ("wall_s", "refused_429", "requests"):
        per = [r[key] for r in rows if r["setting"] == "per-call"]
        shared = [r[key] for r in rows if r["setting"] != "per-call"]
        lines.append("")
        lines.append(f"Median {key}: per-call {statistics.median(per)}, shared {statistics.median(shared)}")
    text = "\n".join(lines) + "\n"
    print(text)
    if ns.out:
        ns.out.write_text(text)
        ns.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
