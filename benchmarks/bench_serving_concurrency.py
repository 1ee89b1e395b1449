"""Concurrency of model calls against a server with a fixed decode time per token.

An OpenAI-compatible server on loopback (the CPU stand-in's FastAPI app under uvicorn, in
its own process, keep-alive 90 s like Ray Serve's proxy) answers every call after
`tokens_out x latency` seconds. Agents reach it through `backend=serve
model.serving.route=http`, i.e. the real HTTP client of the openai backend. The ideal
critical path of a run is the sum over its rounds of the slowest call of the round (what
a server that batches all calls of a round perfectly would give); for concurrent runs
the ideal of the batch is the longest ideal among them.

Three ratios are reported, ideal / actual:
- end to end: actual = wall time of the whole run (batch);
- rounds only: actual = from the start of the first round (its end minus its slowest call)
  to the end of the last round, over the batch (start-up and recording excluded);
- rounds only, per run: each run's ideal over its own rounds span (median over the batch):
  whether the calls of every round stay concurrent while other runs share the server.

Each call's send time is in the events (`call_started`), so the second table says where the
time beyond the ideal goes (medians over the batches):
- measured/wall: the ideal computed from the measured latency of each round's slowest call
  instead of its simulated decode time (what is left is the runtime between calls);
- start spread: first call of the earliest run to first call of the latest run;
- send spread: within a run's round, first to last call sent;
- call extra (median, p90): a call's latency beyond its simulated decode time (the server's
  queue and both sides' HTTP work);
- round gap: a run's last reply of a round to its first call of the next (driver, environment).

With `--pooled` (execution.reuse_actors=true) an unmeasured warm-up batch first starts the
driver and host processes and the results_dir's recorder, as the first runs of a sweep
do; each setting is then measured `--repeat` times and the table gives the medians.

    python benchmarks/bench_serving_concurrency.py --pooled --repeat 5 --out benchmarks/results/serving_pooled.md
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import socket
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.cluster.ray_session import ensure_ray

from masgrid._private.platform.sweeps.ray_runs import run_many
SETTINGS = (("1 run x 100 agents", 1, 100), ("20 runs x 20 agents", 20, 20))
RATIOS = ("ideal/wall", "ideal/rounds", "ideal/rounds per run (median)")
BREAKDOWN = ("measured/wall", "start spread_s", "send spread_s", "call extra_s", "call extra p90_s", "round gap_s")


def _serve(port: int, latency: float) -> None:
    import uvicorn

    from masgrid._private.actors.serving.spec import StandinSpec
    from masgrid._private.actors.serving.standin import StandinCore, build_app

    app = build_app(StandinCore(StandinSpec(per_token_latency_s=latency)))
    gc.freeze()  # as the Serve replica does (masgrid/_private/actors/heap.py): no full collections mid-batch
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", limit_concurrency=10_000, backlog=4096,
                timeout_keep_alive=90)


def start_server(latency: float) -> tuple[str, multiprocessing.Process]:
    """The loopback server in its own process (it must not share a GIL with this script)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(port, latency), daemon=True)
    proc.start()
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base_url + "/models", timeout=1).read()
            return base_url, proc
        except OSError:
            if time.monotonic() > deadline or not proc.is_alive():
                raise SystemExit("the loopback server did not start") from None
            time.sleep(0.1)


def configs(base_url: str, runs: int, agents: int, results_dir: str, protocol: str, k: int,
            pooled: bool = False, first_seed: int = 0, http_client: str = "direct") -> list[RunConfig]:
    model = {"name": "standin", "served_name": "masgrid-standin", "base_url": base_url, "timeout_s": 600,
             "max_retries": 0, "max_concurrency": 1024, "http_client": http_client,
             "serving": {"kind": "standin", "route": "http"}}
    return [RunConfig.from_mapping({"task": "sorting", "protocol": protocol, "agents": agents, "k": k,
                                    "mode": "random", "backend": "serve", "model": model, "seed": seed,
                                    "results_dir": results_dir,
                                    "execution": {"agents_per_actor": 25, "reuse_actors": pooled}})
            for seed in range(first_seed, first_seed + runs)]


def measure(cfgs: list[RunConfig], latency: float) -> dict[str, float]:
    t0 = time.perf_counter()
    summaries = run_many(cfgs, max_concurrent=len(cfgs))
    wall = time.perf_counter() - t0
    bad = [s for s in summaries if s.status != "ok"]
    if bad:
        raise SystemExit(f"{len(bad)} run(s) failed: {bad[0].error}")
    ids = {s.run_id for s in summaries}
    events = pd.read_parquet(Path(cfgs[0].results_dir) / "events", filters=[("kind", "==", "model_call")])
    calls = events[events.run_id.isin(ids)].copy()
    calls["sent"] = calls.call_started
    calls["done"] = calls.sent + pd.to_timedelta(calls.latency_s, unit="s")
    calls["extra_s"] = calls.latency_s - calls.tokens_out * latency  # beyond the simulated decode time
    per_round = calls.groupby(["run_id", "phase", "round"]).agg(
        slowest_tokens=("tokens_out", "max"), slowest_call=("latency_s", "max"),
        first_sent=("sent", "min"), last_sent=("sent", "max"), ended=("done", "max"))
    ideal_per_run = (per_round.slowest_tokens * latency).groupby(level="run_id").sum()
    measured_per_run = per_round.slowest_call.groupby(level="run_id").sum()
    starts = per_round.first_sent.groupby(level="run_id").min()
    ends = per_round.ended.groupby(level="run_id").max()
    span = (ends.max() - starts.min()).total_seconds()
    ideal = float(ideal_per_run.max())
    per_run = ideal_per_run / (ends - starts).dt.total_seconds()
    nxt = per_round.first_sent.groupby(level="run_id").shift(-1)
    gaps = (nxt - per_round.ended).dropna().dt.total_seconds()
    return {"calls": len(calls), "rounds/run": int(per_round.groupby(level="run_id").size().max()),
            "ideal_s": ideal, "wall_s": wall, "rounds_s": span, "ideal/wall": ideal / wall,
            "ideal/rounds": ideal / span, "ideal/rounds per run (median)": float(per_run.median()),
            "measured/wall": float(measured_per_run.max()) / wall,
            "start spread_s": (starts.max() - starts.min()).total_seconds(),
            "send spread_s": float((per_round.last_sent - per_round.first_sent).dt.total_seconds().median()),
            "call extra_s": float(calls.extra_s.median()), "call extra p90_s": float(calls.extra_s.quantile(0.9)),
            "round gap_s": float(gaps.median()) if len(gaps) else 0.0}


def summarise(label: str, runs: int, agents: int, reps: list[dict[str, float]]) -> dict[str, object]:
    row: dict[str, object] = {"setting": label, "runs": runs, "agents/run": agents, "repeats": len(reps)}
    for key in ("calls", "rounds/run", "ideal_s", "wall_s", "rounds_s", *RATIOS):
        values = [r[key] for r in reps]
        row[key] = round(statistics.median(values), 3 if key in RATIOS else 2)
    row["ideal/wall min-max"] = f"{min(r['ideal/wall'] for r in reps):.3f}-{max(r['ideal/wall'] for r in reps):.3f}"
    return row


def breakdown(label: str, reps: list[dict[str, float]]) -> dict[str, object]:
    """Where the time beyond the ideal goes (medians over the batches)."""
    return {"setting": label, **{key: round(statistics.median(r[key] for r in reps), 3) for key in BREAKDOWN}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.1, help="simulated seconds per generated token")
    parser.add_argument("--protocol", default="broadcast")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="measured batches per setting (medians reported)")
    parser.add_argument("--http-client", default="direct", choices=["aiohttp", "httpx", "direct"],
                        help="model.http_client of the agents (the Serve presets use direct)")
    parser.add_argument("--out", type=Path, default=None, help="write the table (markdown) here")
    parser.add_argument("--pooled", action="store_true",
                        help="execution.reuse_actors=true, after an unmeasured warm-up batch")
    ns = parser.parse_args()
    ensure_ray(None, log_to_driver=False)
    base_url, server = start_server(ns.latency)
    rows, parts = [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, runs, agents in SETTINGS:
                out = f"{tmp}/{runs}x{agents}"
                if ns.pooled:  # start hosts, drivers and the results_dir's recorder once, as a sweep does
                    run_many(configs(base_url, runs, agents, out, ns.protocol, ns.k, True, 1000, ns.http_client), runs)
                reps = [measure(configs(base_url, runs, agents, out, ns.protocol, ns.k, ns.pooled,
                                        2000 + 100 * rep, ns.http_client), ns.latency)
                        for rep in range(ns.repeat)]
                for rep in reps:
                    print(label, {k: round(v, 3) for k, v in rep.items() if k in RATIOS + BREAKDOWN}, flush=True)
                rows.append(summarise(label + (" (pooled)" if ns.pooled else ""), runs, agents, reps))
                parts.append(breakdown(label, reps))
    finally:
        server.terminate()
    table = pd.DataFrame(rows).to_markdown(index=False)
    table += "\n\nWhere the rest goes (medians; seconds):\n\n" + pd.DataFrame(parts).to_markdown(index=False)
    note = (f"latency {ns.latency} s per generated token, protocol={ns.protocol}, k={ns.k}, "
            f"model.http_client={ns.http_client}, "
            f"medians of {ns.repeat} measured batches per setting")
    print(note)
    print(table)
    if ns.out:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(f"{note}\n\n{table}\n")


if __name__ == "__main__":
    main()
