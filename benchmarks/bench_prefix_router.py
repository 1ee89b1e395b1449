"""Prefix-cache hit rate and output tokens/s of one SIMAS sweep over two replicas of the tiny
model, behind Serve's default router and behind Serve LLM's prefix-aware router, side by side.

    PYTHONPATH=. flock /tmp/masgrid-engine.lock python benchmarks/bench_prefix_router.py \\
        --out benchmarks/results/prefix_router.md

On the 2-core machine the four engines take about 3 minutes to deploy and a sweep 20-30 s at
the defaults; `--repeat 2` ran in 7 minutes (the figures in benchmarks/results/).

Two Serve LLM apps run at once in one private Ray head (`masgrid up` in a temp dir of its
own): `pfx-default` (router=default: Serve's power of two choices) and `pfx-prefix`
(router=prefix_aware: PrefixCacheAffinityRouter, its settings from --prefix-router), each with
two replicas of vLLM's CPU engine on the tiny model. The same SIMAS sweep (n agents, several
datasets and seeds, `--runs` runs with `--in-flight` at once, by DeploymentHandle:
backend=serve) is run against each app alternately, ABBA (default, prefix, prefix, default,
...), `--repeat` times, after one unmeasured one-round sweep per app (warm drivers, the
engines' first forward passes). Each repeat draws fresh seeds, the
same for both apps, so no repeat finds its own prompts in a cache an earlier one filled; both
apps see the same sequence of prompts.

Per sweep:
- engine hit rate: prefix-cache hits / queries (tokens), the deltas of both replicas' own
  counters (vLLM's, exported by Serve LLM through Ray's metrics agent, tagged by replica);
- runs' hit rate: cached / prompt tokens over all calls, from usage.prompt_tokens_details
  as masgrid records it (and the median run's cache_hit_rate);
- output tokens/s: completion tokens of all calls / span (first call sent to last reply);
- busiest replica's share of the calls, from the engines' request counters.
Reported: medians per router over the repeats, and every sweep's figures in the .json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_simas_sweep import start_head, stop_head  # noqa: E402
from masgrid._private.actors.serving.tiny_model import build_tiny_model  # noqa: E402
from masgrid._private.platform.run.config import RunConfig  # noqa: E402
from masgrid._private.platform.cluster.ray_session import ensure_ray  # noqa: E402
from masgrid._private.platform.sweeps.ray_runs import run_many  # noqa: E402
from masgrid._private.platform.commands.serve_cli import compose_model  # noqa: E402
from tests.support.serve_replicas import engine_counters, replica_ids, settled_counters  # noqa: E402

ROUTERS = ("default", "prefix_aware")
#: (task, simas options): the datasets shipped with masgrid, cycled over the runs
DATASETS: list[tuple[str, dict[str, Any]]] = [
    ("simas/mmlu", {"subject": "college_physics"}), ("simas/mmlu", {"subject": "abstract_algebra"}),
    ("simas/ekar", {}), ("simas/aime", {}),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def engine_cores() -> dict[str, str]:
    """Cores each engine process's threads may run on ({pid name: allowed cores}): vLLM binds a
    CPU engine's OpenMP threads itself (VLLM_CPU_OMP_THREADS_BIND, "auto" at TP 1)."""
    out = {}
    for proc in Path("/proc").iterdir():
        try:
            name = (proc / "comm").read_text().strip()
            if not name.startswith("VLLM"):
                continue
            allowed = set()
            for task in (proc / "task").iterdir():
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("Cpus_allowed_list:"):
                        allowed.add(line.split(":", 1)[1].strip())
            out[f"{proc.name} {name}"] = " | ".join(sorted(allowed))
        except OSError:
            continue
    return out


def deploy_app(router: str, model_dir: Path, port: int, ns: argparse.Namespace):
    from masgrid._private.actors.serving.deploy import deploy

    app = "pfx-default" if router == "default" else "pfx-prefix"
    overrides = [
        "model=tiny_cpu", f"model.serving.replicas={ns.replicas}", f"model.serving.router={router}",
        "model.serving.replica_cpus=0.1", "model.serving.cpus_per_worker=0.1", "model.serving.ingress_cpus=0.1",
        f"model.serving.app={app}", f"model.serving.route_prefix=/{app}", f"model.serving.http_port={port}",
        f"model.serving.model_path={model_dir}", f"model.tokenizer=hf:{model_dir}/tokenizer.json",
        f"model.max_tokens={ns.max_tokens}", "model.max_retries=0", "model.timeout_s=300"]
    if router == "prefix_aware":
        overrides += [f"+model.serving.prefix_router.{kv}" for kv in ns.prefix_router]
    settings = compose_model(overrides)
    t0 = time.monotonic()
    spec = deploy(settings)
    print(f"{app}: {ns.replicas} replicas ready in {time.monotonic() - t0:.0f} s", flush=True)
    return settings, spec


def sweep_configs(settings, results: Path, seed0: int, runs: int, rounds: int,
                  ns: argparse.Namespace) -> list[RunConfig]:
    model = settings.model_dump()
    out = []
    for k in range(runs):
        task, options = DATASETS[k % len(DATASETS)]
        out.append(RunConfig.from_mapping({
            "task": task, "protocol": "groupchat", "agents": ns.agents, "seed": seed0 + k, "backend": "serve",
            "model": model, "results_dir": str(results), "preflight": False,
            "execution": {"components": "driver", "runs_per_driver": ns.per_driver},
            "simas": {"rounds": rounds, "profiles": "pool", "question": (seed0 + k) % 8, **options}}))
    return out


def one_sweep(settings, spec, results: Path, seed0: int, runs_n: int, rounds: int,
              ns: argparse.Namespace) -> dict[str, Any]:
    deployment = spec.llm_deployment_name(settings.request_model)
    ids = replica_ids(spec.app, deployment)
    before = engine_counters(ids)  # settled: the previous sweep of this app waited for its counts
    t0 = time.monotonic()
    run_many(sweep_configs(settings, results, seed0, runs_n, rounds, ns), max_concurrent=ns.in_flight, keep_warm=True)
    wall = time.monotonic() - t0
    runs = pd.read_parquet(results / "runs")
    events = pd.read_parquet(results / "events")
    calls = events[events["kind"] == "model_call"]
    answered = int(calls["error"].isna().sum())
    after = settled_counters(ids, requests=sum(c["request_success_total"] for c in before.values()) + answered)
    per_replica = {r: {k: after[r][k] - before[r][k] for k in after[r]} for r in ids}
    delta = {k: sum(d[k] for d in per_replica.values()) for k in after[ids[0]]}
    served = {r: int(d["request_success_total"]) for r, d in per_replica.items()}
    sent = calls["call_started"].map(lambda t: t.timestamp())
    start, end = sent.min(), (sent + calls["latency_s"]).max()
    return {
        "runs": len(runs), "calls": len(calls), "failed_calls": int(calls["error"].notna().sum()),
        "runs_not_ok": int((runs["status"] != "ok").sum()), "wall_s": round(wall, 2), "span_s": round(end - start, 2),
        "out_tok_s": calls["tokens_out"].sum() / (end - start),
        "hit_engine": delta["prefix_cache_hits_total"] / delta["prefix_cache_queries_total"],
        "hit_runs": calls["tokens_cached"].sum() / calls["tokens_in"].sum(),
        "hit_runs_median": float(runs["cache_hit_rate"].median()),
        "mean_prompt": float(calls["tokens_in"].mean()),
        "calls_per_replica": sorted(served.values(), reverse=True),
        "busiest_share": max(served.values()) / max(1, sum(served.values())),
        "engine_tokens_match": (delta["generation_tokens_total"] == calls["tokens_out"].sum()
                                and delta["prompt_tokens_total"] == calls["tokens_in"].sum()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=12, help="SIMAS runs per sweep")
    parser.add_argument("--in-flight", type=int, default=8, help="runs in flight (sweep.max_concurrent)")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--per-driver", type=int, default=4, help="execution.runs_per_driver (components=driver)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--prefix-router", action="append", default=[], metavar="KEY=VALUE",
                        help="a model.serving.prefix_router setting of the prefix-aware app (repeatable)")
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()
    from ray import serve

    head = start_head()
    os.environ.update(head)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    raw: list[dict[str, Any]] = []
    cores: dict[str, str] = {}
    t_start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            build_tiny_model(work / "tiny")
            ensure_ray()
            port = free_port()
            serve.start(http_options={"host": "127.0.0.1", "port": port})
            apps = {router: deploy_app(router, work / "tiny", port, ns) for router in ROUTERS}
            cores = engine_cores()
            print("engine processes and their threads' cores:", cores, flush=True)
            for router, (settings, spec) in apps.items():  # unmeasured, one round: warm drivers, first passes
                one_sweep(settings, spec, work / f"warmup-{router}", 10_000, ns.in_flight, 1, ns)
            for i in range(ns.repeat):
                order = ROUTERS if i % 2 == 0 else ROUTERS[::-1]
                for router in order:
                    settings, spec = apps[router]
                    row = one_sweep(settings, spec, work / f"{router}-{i}", 1000 * (i + 1), ns.runs, ns.rounds, ns)
                    raw.append({"router": router, "repeat": i, **row})
                    print(router, i, json.dumps(row, default=float), flush=True)
                    if ns.out:  # so far, in case the benchmark is stopped
                        ns.out.with_suffix(".json").write_text(json.dumps({"sweeps": raw, "engine_cores": cores},
                                                                          indent=1, default=float) + "\n")
            for _, spec in apps.values():
                serve.delete(spec.app)
    finally:
        import ray

        ray.shutdown()  # before the head goes: a driver still connected then hung at exit
        stop_head(head)
    total = time.monotonic() - t_start
    rows = []
    for router in ROUTERS:
        mine = [r for r in raw if r["router"] == router]
        rows.append({
            "router": router, "sweeps": len(mine), "calls per sweep": mine[0]["calls"],
            "mean prompt (tokens)": round(statistics.median(r["mean_prompt"] for r in mine)),
            "hit rate (engines' counters)": round(statistics.median(r["hit_engine"] for r in mine), 3),
            "hit rate (runs' cached tokens)": round(statistics.median(r["hit_runs"] for r in mine), 3),
            "median run's cache_hit_rate": round(statistics.median(r["hit_runs_median"] for r in mine), 3),
            "output tok/s": round(statistics.median(r["out_tok_s"] for r in mine)),
            "sweep wall (s)": round(statistics.median(r["wall_s"] for r in mine), 1),
            "busiest replica's share": round(statistics.median(r["busiest_share"] for r in mine), 2),
            "failed calls": sum(r["failed_calls"] for r in mine),
            "tokens = engines' counters": all(r["engine_tokens_match"] for r in mine)})
    table = pd.DataFrame(rows).to_markdown(index=False)
    print(table)
    if ns.out:
        load = os.getloadavg()
        command = (f"benchmarks/bench_prefix_router.py --repeat {ns.repeat} --runs {ns.runs} --in-flight {ns.in_flight} "
                   f"--agents {ns.agents} --rounds {ns.rounds} --max-tokens {ns.max_tokens} --replicas {ns.replicas}"
                   + "".join(f" --prefix-router {kv}" for kv in ns.prefix_router))
        ns.out.write_text(
            f"# Two replicas behind the default and the prefix-aware router ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
            f"`{command}`: medians over {ns.repeat} sweeps per router, alternated ABBA, each app with {ns.replicas} "
            f"replicas of vLLM's CPU engine (tiny model) on a {os.cpu_count()}-core machine; whole benchmark "
            f"{total / 60:.1f} min, load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.\n\n"
            + table + "\n")
        ns.out.with_suffix(".json").write_text(json.dumps({"sweeps": raw, "engine_cores": cores}, indent=1,
                                                          default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
