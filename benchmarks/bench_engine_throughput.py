"""masgrid's output tokens/s against a real engine, as a fraction of that engine's own peak.

    PYTHONPATH=. python benchmarks/bench_engine_throughput.py --isolate --out benchmarks/results/engine_throughput.md
    PYTHONPATH=. python benchmarks/bench_engine_throughput.py --out benchmarks/results/engine_throughput_shared.md

`--layout defaults` (the default): masgrid runs as a researcher's `masgrid run -m` does with
no execution or sweep flag: a sweep (`run_sweep`, default SweepSettings) whose runs in flight
follow the engine's load (`sweep.admission=load`) and whose execution layout is the
schedule's (`execution.components=auto`). `--layout explicit` is the earlier measurement: a
fixed number of SIMAS runs in flight (`--simas-in-flight`) with the components and runs per
driver given by flags, through `run_many`.

The engine's peak is vLLM's own serving benchmark on the same workload shape at each
concurrency of `--bench-concurrency` (and at the most calls masgrid had in flight), the best
of them; masgrid's figure is divided by that.

One vLLM engine (the CPU build, the tiny model of `masgrid model tiny`) serves both sides,
measured side by side in one process, alternating (bench, masgrid, bench, masgrid, ...):

- the engine's limit: vLLM's own serving benchmark (`vllm.benchmarks.serve`, run in a
  subprocess) on the same workload shape as masgrid's calls - the same number of requests,
  mean prompt length, completion length (the random model always writes max_tokens), shared
  prefix (from masgrid's cached-token share) and concurrency (the most calls masgrid's side
  can have in flight: 100 for AgentsNet, one per run in flight for SIMAS);
- masgrid: a sweep against the same server with `backend=openai`, `http_client=lean`;
  tokens/s = completion tokens of all calls / span (first call sent to last reply, from the
  events' call_started + latency_s), so Ray start-up and recording are not counted.

masgrid runs as a researcher's second and later sweeps of a session do (`--warm`, the
default): joined to a `masgrid up` head of the benchmark's own (a private Ray temp dir), with
the warm drivers and hosts an unmeasured first sweep of the same workload left. `--cold`
measures each sweep on a fresh local Ray instead, whose worker processes start (two at a
time, about 1.5 CPU s each) inside the measured span.

Workloads: AgentsNet coloring with N = 100 agents (100 calls in flight per round), and
SIMAS sweeps of n = 8 groups (sequential turns; C runs in flight, each a growing shared
prefix, `--simas-waves` runs per slot), for each C of `--simas-in-flight`. Reported: medians
over --repeat pairs, the ratio masgrid/engine, the prefix-cache hit rate of both (masgrid's
from the recorded cached_tokens; the bench's from /metrics), and CPU milliseconds per call
of each side by process group (masgrid's Ray workers, the engine's processes, the bench
client), read from /proc over each side's measured interval: what limits a side on 2 cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_simas_sweep import start_head, stop_head  # noqa: E402
from masgrid._private.actors.serving.tiny_model import build_tiny_model  # noqa: E402
from masgrid._private.platform.run.config import RunConfig  # noqa: E402
from masgrid._private.platform.cluster.ray_session import ensure_ray  # noqa: E402
from masgrid._private.platform.sweeps.ray_runs import run_many  # noqa: E402
from tests.support.engine import start_engine  # noqa: E402

BENCH = """
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
parser = FlexibleArgumentParser(); add_cli_args(parser)
result = main(parser.parse_args(sys.argv[1:]))
print("RESULT " + json.dumps({k: v for k, v in result.items() if isinstance(v, (int, float, str))}))
"""


def process_group(cmdline: list[str], name: str) -> str | None:
    """Which side a process belongs to (None: neither): masgrid's Ray workers, the engine, the bench client."""
    text = " ".join(cmdline) or name
    if text.startswith("VLLM::") or "vllm.entrypoints.openai.api_server" in text:
        return "engine"
    if "vllm.benchmarks.serve" in text:
        return "bench client"
    if text.startswith("ray::"):
        return "masgrid (Ray workers)"
    if "bench_engine_throughput" in text:
        return "masgrid (this process)"
    if "gcs_server" in text or "raylet" in text:
        return "ray (gcs, raylet)"
    return None


def cpu_snapshot() -> dict[int, tuple[str, float]]:
    out: dict[int, tuple[str, float]] = {}
    for p in psutil.process_iter(["name", "cmdline", "cpu_times"]):
        try:
            group = process_group(p.info["cmdline"] or [], p.info["name"] or "")
            if group is not None:
                t = p.info["cpu_times"]
                out[p.pid] = (group, t.user + t.system)
        except (psutil.Error, TypeError):
            continue
    return out


def cpu_between(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per group between two snapshots (a process started in between counts whole)."""
    out: dict[str, float] = {}
    for pid, (group, cpu) in after.items():
        out[group] = out.get(group, 0.0) + cpu - before.get(pid, (group, 0.0))[1]
    return out


def workloads(base_url: str, max_tokens: int, results: Path, simas_in_flight: list[int],
              simas_waves: int, simas_components: str, simas_per_driver: int,
              defaults: bool = False, simas_runs: int = 96, agentsnet_runs: int = 1,
              ) -> dict[str, tuple[list[RunConfig], int]]:
    """name -> (the runs, the calls in flight masgrid's side can have at most; 0: set by admission)."""
    model = {"name": "tiny", "base_url": base_url, "max_tokens": max_tokens, "max_retries": 0, "timeout_s": 300.0,
             "http_client": "lean"}
    out: dict[str, tuple[list[RunConfig], int]] = {
        f"agentsnet N=100{f' ({agentsnet_runs} runs)' if agentsnet_runs > 1 else ''}": ([RunConfig.from_mapping({
            "task": "agentsnet/coloring", "protocol": "local", "agents": 100, "graph": "ws", "seed": seed,
            "agentsnet": {"rounds": 3}, "backend": "openai", "model": model,
            "results_dir": str(results / "agentsnet"), "preflight": False}) for seed in range(agentsnet_runs)],
            0 if defaults else 100)}
    if defaults:  # no execution key at all: the schedule's layout, runs in flight by admission
        out[f"simas n=8 ({simas_runs} runs, defaults)"] = ([RunConfig.from_mapping({
            "task": "simas/mmlu", "protocol": "groupchat", "agents": 8, "seed": k // 10, "backend": "openai",
            "model": model, "results_dir": str(results / "simas"), "preflight": False,
            "simas": {"rounds": 2, "profiles": "pool", "subject": "college_physics", "question": k % 10}})
            for k in range(simas_runs)], 0)
        return out
    for c in simas_in_flight:
        runs = c * simas_waves
        out[f"simas n=8 ({c} runs in flight)"] = ([RunConfig.from_mapping({
            "task": "simas/mmlu", "protocol": "groupchat", "agents": 8, "seed": k // 10, "backend": "openai",
            "model": model, "results_dir": str(results / "simas"), "preflight": False,
            "execution": {"components": simas_components,
                          "runs_per_driver": simas_per_driver if simas_components == "driver" else 1},
            "simas": {"rounds": 2, "profiles": "pool", "subject": "college_physics", "question": k % 10}})
            for k in range(runs)], c)
    return out


def execute(cfgs: list[RunConfig], concurrent: int, warm: bool) -> None:
    """`concurrent` 0: the sweep path with default settings (admission follows the engine's
    load); else run_many with that many runs in flight, as before."""
    if concurrent:
        run_many(cfgs, max_concurrent=concurrent, keep_warm=warm)
        return
    from masgrid._private.platform.sweeps.sweep import SweepSettings, run_sweep

    run_sweep(cfgs, SweepSettings(progress="off", reuse_actors=True))


def peak_overlap(starts: pd.Series, ends: pd.Series) -> int:
    """Most intervals open at once."""
    points = sorted([(t, 1) for t in starts] + [(t, -1) for t in ends], key=lambda p: (p[0], p[1]))
    most = now = 0
    for _, step in points:
        now += step
        most = max(most, now)
    return most


def masgrid_side(cfgs: list[RunConfig], concurrent: int, warm: bool) -> dict[str, float]:
    results = Path(cfgs[0].results_dir)
    before = cpu_snapshot()
    execute(cfgs, concurrent, warm)
    cpu = cpu_between(before, cpu_snapshot())
    ids = {c.run_id for c in cfgs}
    events = pd.read_parquet(results / "events")
    calls = events[(events["kind"] == "model_call") & events["run_id"].isin(ids)]
    start = calls["call_started"].min().timestamp()
    call_end = calls["call_started"].astype("int64") / 1e6 + calls["latency_s"]
    end = call_end.max()
    prompt, cached = calls["tokens_in"], calls["tokens_cached"].fillna(0)
    runs = pd.read_parquet(results / "runs")
    runs = runs[runs["run_id"].isin(ids)]
    return {"calls": len(calls), "span_s": end - start, "out_tok_s": calls["tokens_out"].sum() / (end - start),
            "mean_prompt": prompt.mean(), "cache_hit": cached.sum() / prompt.sum(),
            "errors": int(calls["error"].notna().sum()),
            "calls_in_flight_peak": peak_overlap(calls["call_started"].astype("int64") / 1e6, call_end),
            "calls_in_flight_mean": float(calls["latency_s"].sum() / (end - start)),
            "runs_in_flight_peak": peak_overlap(runs["started_at"], runs["finished_at"]),
            "cpu_ms_per_call": {g: round(1000 * s / len(calls), 2) for g, s in sorted(cpu.items())}}


#: a new seed for every benchmark run: its random prompts must not be cached from an earlier run
#: (with one seed, a second run at another concurrency found 99 % of its prompt tokens cached)
BENCH_SEEDS = itertools.count()


def engine_side(base_url: str, model_dir: Path, shape: dict[str, float], max_tokens: int, concurrency: int,
                engine) -> dict[str, float]:
    prefix = int(shape["mean_prompt"] * shape["cache_hit"])
    args = ["--backend", "openai-chat", "--base-url", base_url.removesuffix("/v1"), "--endpoint", "/v1/chat/completions",
            "--model", "tiny", "--tokenizer", str(model_dir), "--dataset-name", "random",
            "--random-input-len", str(max(1, int(shape["mean_prompt"]) - prefix)), "--random-prefix-len", str(prefix),
            "--random-output-len", str(max_tokens), "--ignore-eos", "--num-prompts", str(int(shape["calls"])),
            "--max-concurrency", str(concurrency), "--disable-tqdm", "--seed", str(next(BENCH_SEEDS))]
    before, cpu0, kids0 = engine.counters(), cpu_snapshot(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", BENCH, *args], capture_output=True, text=True, check=True)
    after, cpu = engine.counters(), cpu_between(cpu0, cpu_snapshot())
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the bench client, reaped by now
    cpu["bench client"] = kids.ru_utime + kids.ru_stime - kids0.ru_utime - kids0.ru_stime
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    queries = after["prefix_cache_queries_total"] - before["prefix_cache_queries_total"]
    hits = after["prefix_cache_hits_total"] - before["prefix_cache_hits_total"]
    calls = max(1, int(shape["calls"]))
    return {"out_tok_s": result["output_throughput"], "failed": result["failed"],
            "cache_hit": hits / queries if queries else 0.0,
            "cpu_ms_per_call": {g: round(1000 * s / calls, 2) for g, s in sorted(cpu.items())}}


def fresh(cfgs: list[RunConfig], results_dir: Path) -> list[RunConfig]:
    return [RunConfig.from_mapping({**c.model_dump(mode="json"), "results_dir": str(results_dir)}) for c in cfgs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--simas-in-flight", default="8", help="comma list: SIMAS runs in flight (sweep.max_concurrent)")
    parser.add_argument("--simas-waves", type=int, default=4, help="SIMAS runs per slot (runs = in flight x waves)")
    parser.add_argument("--only", choices=["agentsnet", "simas"], default=None)
    parser.add_argument("--simas-components", choices=["actors", "driver"], default="driver",
                        help="execution.components of the SIMAS runs (driver: no Ray call per turn)")
    parser.add_argument("--simas-per-driver", type=int, default=4,
                        help="execution.runs_per_driver of the SIMAS runs (with --simas-components driver)")
    parser.add_argument("--layout", choices=["defaults", "explicit"], default="defaults",
                        help="defaults: masgrid with no execution or sweep flag (a sweep, admission by load); "
                             "explicit: --simas-in-flight/--simas-components/--simas-per-driver through run_many")
    parser.add_argument("--simas-runs", type=int, default=96, help="--layout defaults: SIMAS runs in the sweep")
    parser.add_argument("--agentsnet-runs", type=int, default=1, help="AgentsNet runs (1: one run, 100 calls a round)")
    parser.add_argument("--bench-concurrency", default="16,32,64,128",
                        help="comma list: vLLM's benchmark runs at each (and at masgrid's own peak of calls in "
                             "flight); the best is the engine's peak")
    parser.add_argument("--cold", action="store_true", help="a fresh local Ray per sweep side, no warm-up sweep")
    parser.add_argument("--isolate", action="store_true",
                        help="the engine on core 0, both clients (masgrid and its Ray, vLLM's bench) on the other cores")
    ns = parser.parse_args()
    warm = not ns.cold
    in_flight = [int(c) for c in ns.simas_in_flight.split(",")]
    bench_levels = [int(c) for c in ns.bench_concurrency.split(",") if c.strip()]
    head = None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = work / "tiny"
        build_tiny_model(model_dir)
        cores = sorted(os.sched_getaffinity(0))
        if ns.isolate and len(cores) < 2:
            raise SystemExit("--isolate needs two cores")
        engine = start_engine(model_dir, work, cpus={cores[0]} if ns.isolate else None)
        if ns.isolate:  # everything started from here on (the head, its workers, the bench) inherits this
            os.sched_setaffinity(0, set(cores[1:]))
        try:
            if warm:
                head = start_head()
                os.environ.update(head)
                os.environ["RAY_AUTH_MODE"] = "disabled"
            ensure_ray()
            rows, raw = [], []
            for name, (cfgs, concurrent) in workloads(engine.base_url, ns.max_tokens, work / "r", in_flight,
                                                      ns.simas_waves, ns.simas_components,
                                                      ns.simas_per_driver, ns.layout == "defaults", ns.simas_runs,
                                                      ns.agentsnet_runs).items():
                if ns.only and not name.startswith(ns.only):
                    continue
                if warm:  # the warm drivers and hosts a researcher's earlier sweep left
                    execute(fresh(cfgs, work / "r" / f"{name[:6]}-warmup-{concurrent}"), concurrent, True)
                pairs = []
                for i in range(ns.repeat):
                    mine = masgrid_side(fresh(cfgs, work / "r" / f"{name[:6]}{concurrent}-{i}"), concurrent, warm)
                    levels = sorted({int(mine["calls_in_flight_peak"]), *bench_levels})
                    tried = {c: engine_side(engine.base_url, model_dir, mine, ns.max_tokens, c, engine) for c in levels}
                    best = max(tried, key=lambda c: tried[c]["out_tok_s"])
                    peak = {**tried[best], "concurrency": best,
                            "by_concurrency": {c: round(t["out_tok_s"]) for c, t in tried.items()}}
                    pairs.append((mine, peak))
                    raw.append({"workload": name, "repeat": i, "masgrid": mine, "engine": peak})
                    print(name, i, json.dumps({"masgrid": mine, "engine": peak}, default=float), flush=True)
                ratio = statistics.median(m["out_tok_s"] / p["out_tok_s"] for m, p in pairs)
                rows.append({
                    "workload": name, "calls": int(pairs[0][0]["calls"]),
                    "mean prompt (tokens)": round(statistics.median(m["mean_prompt"] for m, _ in pairs)),
                    "engine peak out tok/s (vLLM bench)": round(statistics.median(p["out_tok_s"] for _, p in pairs)),
                    "bench best concurrency": "/".join(str(p["concurrency"]) for _, p in pairs),
                    "masgrid out tok/s": round(statistics.median(m["out_tok_s"] for m, _ in pairs)),
                    "masgrid / engine": round(ratio, 3),
                    "masgrid runs in flight (peak)": "/".join(str(m["runs_in_flight_peak"]) for m, _ in pairs),
                    "masgrid calls in flight (mean)": round(statistics.median(
                        m["calls_in_flight_mean"] for m, _ in pairs), 1),
                    "engine CPU ms/call masgrid/bench": "{:.1f}/{:.1f}".format(
                        statistics.median(m["cpu_ms_per_call"].get("engine", 0.0) for m, _ in pairs),
                        statistics.median(p["cpu_ms_per_call"].get("engine", 0.0) for _, p in pairs)),
                    "cache hit masgrid": round(statistics.median(m["cache_hit"] for m, _ in pairs), 3),
                    "cache hit bench": round(statistics.median(p["cache_hit"] for _, p in pairs), 3),
                    "masgrid CPU ms/call": round(statistics.median(
                        sum(v for g, v in m["cpu_ms_per_call"].items() if g.startswith("masgrid")) for m, _ in pairs), 1),
                    "bench client CPU ms/call": round(statistics.median(
                        p["cpu_ms_per_call"].get("bench client", 0.0) for _, p in pairs), 1),
                    "failed calls": sum(m["errors"] for m, _ in pairs)})
        finally:
            engine.stop()
            if head is not None:
                stop_head(head)
    table = pd.DataFrame(rows).to_markdown(index=False)
    print(table)
    if ns.out:
        mode = "warm (a private `masgrid up` head, one unmeasured sweep first)" if warm else "cold (fresh Ray)"
        flags = (f"--simas-runs {ns.simas_runs}" if ns.layout == "defaults" else
                 f"--layout explicit --simas-in-flight {ns.simas_in_flight} --simas-waves {ns.simas_waves} "
                 f"--simas-components {ns.simas_components} --simas-per-driver {ns.simas_per_driver}")
        ns.out.write_text(f"# masgrid against a real engine's peak ({time.strftime('%Y-%m-%d')})\n\n"
                          f"`benchmarks/bench_engine_throughput.py --repeat {ns.repeat} --max-tokens {ns.max_tokens} "
                          f"{flags} --agentsnet-runs {ns.agentsnet_runs} --bench-concurrency {ns.bench_concurrency}"
                          f"{' --isolate' if ns.isolate else ''}"
                          f"{' --cold' if not warm else ''}`, medians of side-by-side pairs on one vLLM CPU engine "
                          f"(tiny model), masgrid {mode}.\n\n" + table + "\n")
        ns.out.with_suffix(".json").write_text(json.dumps(raw, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
