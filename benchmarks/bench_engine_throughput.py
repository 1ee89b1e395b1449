"""masgrid's output tokens/s against a real engine, as a fraction of that engine's own peak.

    PYTHONPATH=. python benchmarks/bench_engine_throughput.py --out benchmarks/results/engine_throughput.md

One vLLM engine (the CPU build, the tiny model of `masgrid model tiny`) serves both sides,
measured side by side in one process, alternating (bench, masgrid, bench, masgrid, ...):

- the engine's limit: vLLM's own serving benchmark (`vllm.benchmarks.serve`, run in a
  subprocess) on the same workload shape as masgrid's calls - the same number of requests,
  mean prompt length, completion length (the random model always writes max_tokens), shared
  prefix (from masgrid's cached-token share) and concurrency;
- masgrid: a sweep against the same server with `backend=openai`, `http_client=lean`;
  tokens/s = completion tokens of all calls / span (first call sent to last reply, from the
  events' call_started + latency_s), so Ray start-up and recording are not counted.

Workloads: AgentsNet coloring with N = 100 agents (100 calls in flight per round), and a
SIMAS sweep of n = 8 groups (sequential turns; C runs in flight, each a growing shared
prefix). Reported: medians over --repeat pairs, the ratio masgrid/engine, the prefix-cache
hit rate of both (masgrid's from the recorded cached_tokens; the bench's from /metrics).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from masgrid._private.actors.serving.tiny_model import build_tiny_model  # noqa: E402
from masgrid._private.platform.config import RunConfig  # noqa: E402
from masgrid._private.platform.launch import ensure_ray, run_many  # noqa: E402
from tests.support.engine import start_engine  # noqa: E402

BENCH = """
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
parser = FlexibleArgumentParser(); add_cli_args(parser)
result = main(parser.parse_args(sys.argv[1:]))
print("RESULT " + json.dumps({k: v for k, v in result.items() if isinstance(v, (int, float, str))}))
"""


def workloads(base_url: str, max_tokens: int, results: Path,
              simas_in_flight: int = 8) -> dict[str, tuple[list[RunConfig], int]]:
    model = {"name": "tiny", "base_url": base_url, "max_tokens": max_tokens, "max_retries": 0, "timeout_s": 300.0,
             "http_client": "lean"}
    agentsnet = [RunConfig.from_mapping({
        "task": "agentsnet/coloring", "protocol": "local", "agents": 100, "graph": "ws", "seed": 0,
        "agentsnet": {"rounds": 3}, "backend": "openai", "model": model, "results_dir": str(results / "agentsnet"),
        "preflight": False})]
    simas = [RunConfig.from_mapping({
        "task": "simas/mmlu", "protocol": "groupchat", "agents": 8, "seed": seed, "backend": "openai",
        "model": model, "results_dir": str(results / "simas"), "preflight": False,
        "simas": {"rounds": 2, "profiles": "pool", "subject": "college_physics", "question": q}})
        for seed in range(max(2, simas_in_flight // 4)) for q in range(4)]
    return {"agentsnet N=100": (agentsnet, 1),
            f"simas n=8 ({simas_in_flight} runs in flight)": (simas, simas_in_flight)}


def masgrid_side(cfgs: list[RunConfig], concurrent: int) -> dict[str, float]:
    results = Path(cfgs[0].results_dir)
    run_many(cfgs, max_concurrent=concurrent)
    ids = {c.run_id for c in cfgs}
    events = pd.read_parquet(results / "events")
    calls = events[(events["kind"] == "model_call") & events["run_id"].isin(ids)]
    start = calls["call_started"].min().timestamp()
    end = (calls["call_started"].astype("int64") / 1e6 + calls["latency_s"]).max()
    prompt, cached = calls["tokens_in"], calls["tokens_cached"].fillna(0)
    return {"calls": len(calls), "span_s": end - start, "out_tok_s": calls["tokens_out"].sum() / (end - start),
            "mean_prompt": prompt.mean(), "cache_hit": cached.sum() / prompt.sum(),
            "errors": int(calls["error"].notna().sum())}


def engine_side(base_url: str, model_dir: Path, shape: dict[str, float], max_tokens: int, concurrency: int,
                engine) -> dict[str, float]:
    prefix = int(shape["mean_prompt"] * shape["cache_hit"])
    args = ["--backend", "openai-chat", "--base-url", base_url.removesuffix("/v1"), "--endpoint", "/v1/chat/completions",
            "--model", "tiny", "--tokenizer", str(model_dir), "--dataset-name", "random",
            "--random-input-len", str(max(1, int(shape["mean_prompt"]) - prefix)), "--random-prefix-len", str(prefix),
            "--random-output-len", str(max_tokens), "--ignore-eos", "--num-prompts", str(int(shape["calls"])),
            "--max-concurrency", str(concurrency), "--disable-tqdm", "--seed", "0"]
    before = engine.counters()
    out = subprocess.run([sys.executable, "-c", BENCH, *args], capture_output=True, text=True, check=True)
    after = engine.counters()
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    queries = after["prefix_cache_queries_total"] - before["prefix_cache_queries_total"]
    hits = after["prefix_cache_hits_total"] - before["prefix_cache_hits_total"]
    return {"out_tok_s": result["output_throughput"], "failed": result["failed"],
            "cache_hit": hits / queries if queries else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--simas-in-flight", type=int, default=8, help="SIMAS runs in flight (sweep.max_concurrent)")
    parser.add_argument("--only", choices=["agentsnet", "simas"], default=None)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = work / "tiny"
        build_tiny_model(model_dir)
        engine = start_engine(model_dir, work)
        try:
            ensure_ray()
            rows = []
            for name, (cfgs, concurrent) in workloads(engine.base_url, ns.max_tokens, work / "r",
                                                      ns.simas_in_flight).items():
                if ns.only and not name.startswith(ns.only):
                    continue
                pairs = []
                for i in range(ns.repeat):
                    repeat = [c.model_copy(update={"results_dir": str(work / "r" / f"{name[:6]}{i}")}) for c in cfgs]
                    repeat = [RunConfig.from_mapping({**c.model_dump(mode="json"), "results_dir": r.results_dir})
                              for c, r in zip(cfgs, repeat)]
                    mine = masgrid_side(repeat, concurrent)
                    concurrency = 100 if name.startswith("agentsnet") else concurrent
                    peak = engine_side(engine.base_url, model_dir, mine, ns.max_tokens, concurrency, engine)
                    pairs.append((mine, peak))
                    print(name, i, json.dumps({"masgrid": mine, "engine": peak}), flush=True)
                ratio = statistics.median(m["out_tok_s"] / p["out_tok_s"] for m, p in pairs)
                rows.append({
                    "workload": name, "calls": int(pairs[0][0]["calls"]),
                    "mean prompt (tokens)": round(statistics.median(m["mean_prompt"] for m, _ in pairs)),
                    "engine peak out tok/s": round(statistics.median(p["out_tok_s"] for _, p in pairs)),
                    "masgrid out tok/s": round(statistics.median(m["out_tok_s"] for m, _ in pairs)),
                    "masgrid / peak": round(ratio, 3),
                    "cache hit masgrid": round(statistics.median(m["cache_hit"] for m, _ in pairs), 3),
                    "cache hit bench": round(statistics.median(p["cache_hit"] for _, p in pairs), 3),
                    "failed calls": sum(m["errors"] for m, _ in pairs)})
        finally:
            engine.stop()
    table = pd.DataFrame(rows).to_markdown(index=False)
    print(table)
    if ns.out:
        ns.out.write_text(f"# masgrid against a real engine's peak ({time.strftime('%Y-%m-%d')})\n\n"
                          f"`benchmarks/bench_engine_throughput.py --repeat {ns.repeat} --max-tokens {ns.max_tokens}`, "
                          "medians of side-by-side pairs on one vLLM CPU engine (tiny model).\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
