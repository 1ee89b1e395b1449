"""Concurrency of model calls against a server with a fixed decode time per token.

An OpenAI-compatible server on loopback (the CPU stand-in's FastAPI app under uvicorn)
answers every call after `tokens_out x latency` seconds. Agents reach it through
`backend=serve model.serving.route=http`, i.e. the real HTTP client of the openai
backend. The ideal critical path of a run is the sum over its rounds of the slowest call
of the round (what a server that batches all calls of a round perfectly would give);
for concurrent runs the ideal of the batch is the longest ideal among them.

Two ratios are reported, ideal / actual:
- end to end: actual = wall time of the whole run (batch), Ray actor start-up included;
- rounds only: actual = time spent inside the rounds (start-up excluded): per run, from
  the start of round 1 (end of round 1 minus its slowest call) to the end of the last
  round; for a batch, from the earliest such start to the latest end;
- rounds only, per run: each run's ideal over its own rounds span (median over the batch):
  whether the calls of every round stay concurrent while other runs share the server.

    python benchmarks/bench_serving_concurrency.py --latency 0.1 --out benchmarks/results/serving.md
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

from masgrid.actors.serving.spec import StandinSpec
from masgrid.actors.serving.standin import StandinCore, build_app
from masgrid.platform.config import RunConfig
from masgrid.platform.launch import ensure_ray, run_many


def start_server(latency: float) -> tuple[str, StandinCore]:
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    core = StandinCore(StandinSpec(per_token_latency_s=latency))
    config = uvicorn.Config(build_app(core), host="127.0.0.1", port=port, log_level="warning",
                            limit_concurrency=10_000, backlog=4096)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/v1", core


def configs(base_url: str, runs: int, agents: int, results_dir: str, protocol: str, k: int,
            pooled: bool = False, first_seed: int = 0) -> list[RunConfig]:
    model = {"name": "standin", "served_name": "masgrid-standin", "base_url": base_url, "timeout_s": 600,
             "max_retries": 0, "max_concurrency": 1024,
             "serving": {"kind": "standin", "route": "http"}}
    return [RunConfig.from_mapping({"task": "sorting", "protocol": protocol, "agents": agents, "k": k,
                                    "mode": "random", "backend": "serve", "model": model, "seed": seed,
                                    "results_dir": results_dir,
                                    "execution": {"agents_per_actor": 25, "reuse_actors": pooled}})
            for seed in range(first_seed, first_seed + runs)]


def measure(label: str, cfgs: list[RunConfig], latency: float) -> dict[str, object]:
    t0 = time.perf_counter()
    summaries = run_many(cfgs, max_concurrent=len(cfgs))
    wall = time.perf_counter() - t0
    bad = [s for s in summaries if s.status != "ok"]
    if bad:
        raise SystemExit(f"{label}: {len(bad)} run(s) failed: {bad[0].error}")
    ids = {s.run_id for s in summaries}
    events = pd.read_parquet(Path(cfgs[0].results_dir) / "events")
    calls = events[events.run_id.isin(ids) & (events.kind == "model_call")]
    per_round = calls.groupby(["run_id", "phase", "round"]).agg(slowest_tokens=("tokens_out", "max"),
                                                                 slowest_call=("latency_s", "max"),
                                                                 ended=("time", "max"))
    ideal_per_run = (per_round.slowest_tokens * latency).groupby(level="run_id").sum()
    first = per_round.groupby(level="run_id").head(1)
    starts = first.ended - pd.to_timedelta(first.slowest_call, unit="s")
    ends = per_round.ended.groupby(level="run_id").max()
    span = (ends.max() - starts.min()).total_seconds()
    ideal = float(ideal_per_run.max())
    per_run = ideal_per_run / (ends - starts).dt.total_seconds()
    return {"setting": label, "runs": len(cfgs), "agents/run": cfgs[0].agents,
            "calls": len(calls), "rounds/run": int(per_round.groupby(level="run_id").size().max()),
            "ideal_s": round(ideal, 2), "wall_s": round(wall, 2), "rounds_s": round(span, 2),
            "ideal/wall": round(ideal / wall, 3), "ideal/rounds": round(ideal / span, 3),
            "ideal/rounds per run (median)": round(float(per_run.median()), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.1, help="simulated seconds per generated token")
    parser.add_argument("--protocol", default="broadcast")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="write the table (markdown) here")
    parser.add_argument("--pooled", action="store_true",
                        help="execution.reuse_actors=true, after an unmeasured warm-up that fills the host pool")
    ns = parser.parse_args()
    ensure_ray(None, log_to_driver=False)
    base_url, core = start_server(ns.latency)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, runs, agents in (("1 run x 100 agents", 1, 100), ("20 runs x 20 agents", 20, 20)):
            out = f"{tmp}/{runs}x{agents}"
            if ns.pooled:  # start hosts, drivers and the results_dir's recorder once, as a sweep does
                run_many(configs(base_url, runs, agents, out, ns.protocol, ns.k, True, 1000), runs)
            cfgs = configs(base_url, runs, agents, out, ns.protocol, ns.k, ns.pooled)
            rows.append(measure(label + (" (pooled hosts)" if ns.pooled else ""), cfgs, ns.latency))
    table = pd.DataFrame(rows).to_markdown(index=False)
    note = (f"latency {ns.latency} s per generated token, protocol={ns.protocol}, k={ns.k}, "
            f"server calls {core.calls}")
    print(note)
    print(table)
    if ns.out:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(f"{note}\n\n{table}\n")


if __name__ == "__main__":
    main()
