"""What resuming a killed 16-round run costs, with and without the response cache (model.cache).

    PYTHONPATH=. python benchmarks/bench_cache_resume.py --out benchmarks/results/cache_resume.md

One real engine (vLLM's CPU build serving the tiny model of `masgrid model tiny`; or any
OpenAI-compatible endpoint with --base-url/--served-name) answers a MAS-Bench sorting run of
`--agents` agents and 16 rounds (the random model never submits, so every run makes all
16 x agents calls). Each trial, in a fresh results_dir (and, with the cache, a fresh cache):

1. `masgrid run ... execution.executor=local preflight=false` is started and SIGKILLed once
   the engine has answered `--kill-at` of its calls (half, by default), as a crash would;
2. the same command is run again to the end: the resume, which is what is measured.

Calls and tokens paid are the engine's own counters (/metrics: request_success_total,
prompt_tokens_total, generation_tokens_total) over each attempt; the resumed run's runs row
gives its calls_from_cache. Wall time is the resumed command's, from its start to its exit
(process start-up included), and the run's own wall_s. Trials alternate the two conditions;
medians over `--repeat` trials each. The preflight probes are switched off so that the
engine counts only the run's calls.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import re
import urllib.request
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COUNTERS = ("request_success_total", "prompt_tokens_total", "generation_tokens_total")


def counters(base_url: str) -> dict[str, float]:
    """The engine's counters, summed over its label sets."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return {name: sum(float(v) for v in re.findall(rf"^vllm:{name}\{{[^}}]*\}} ([0-9.e+]+)$", text, re.MULTILINE))
            for name in COUNTERS}


def command(base_url: str, served: str, results: Path, cache: Path | None, agents: int, rounds: int) -> list[str]:
    args = [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "task=sorting", "protocol=broadcast",
            f"agents={agents}", "k=2", f"max_rounds={rounds}", "seed=7", "backend=openai", "model=local_vllm",
            f"model.base_url={base_url}", f"model.served_name={served}", "model.max_tokens=24",
            "model.max_retries=0", "model.http_client=direct", "execution.executor=local", "preflight=false",
            f"results_dir={results}"]
    if cache is not None:
        args += ["model.cache=true", f"model.cache_dir={cache}"]
    return args


def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    return {"calls": int(after["request_success_total"] - before["request_success_total"]),
            "prompt_tokens": int(after["prompt_tokens_total"] - before["prompt_tokens_total"]),
            "completion_tokens": int(after["generation_tokens_total"] - before["generation_tokens_total"])}


def killed_attempt(cmd: list[str], base_url: str, kill_at: int, env: dict[str, str]) -> dict[str, int]:
    """Start the run, SIGKILL it once the engine has answered `kill_at` of its calls."""
    before = counters(base_url)
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    while process.poll() is None:
        if counters(base_url)["request_success_total"] - before["request_success_total"] >= kill_at:
            os.killpg(process.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    process.wait()
    if process.returncode != -signal.SIGKILL:
        raise SystemExit(f"the first attempt ended by itself ({process.returncode}) before {kill_at} calls")
    time.sleep(2.0)  # calls in flight when it died still finish at the engine: they were paid too
    return spent(before, counters(base_url))


def resumed_attempt(cmd: list[str], base_url: str, results: Path, env: dict[str, str]) -> dict[str, Any]:
    before = counters(base_url)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the resumed run failed: {done.stderr[-2000:]}")
    paid = spent(before, counters(base_url))
    run = pd.read_parquet(results / "runs").iloc[-1]
    return {**paid, "tokens": paid["prompt_tokens"] + paid["completion_tokens"], "command_wall_s": wall,
            "run_wall_s": float(run["wall_s"]), "model_calls": int(run["model_calls"]),
            "calls_from_cache": int(run["calls_from_cache"]), "status": str(run["status"]),
            "run_tokens": int(run["tokens_in"] + run["tokens_out"])}


def trial(base_url: str, served: str, work: Path, cached: bool, agents: int, rounds: int, kill_at: int,
          n: int) -> dict[str, Any]:
    results = work / f"{'cache' if cached else 'plain'}-{n}"
    cache = work / f"cache-{n}" if cached else None
    cmd = command(base_url, served, results, cache, agents, rounds)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    first = killed_attempt(cmd, base_url, kill_at, env)
    resumed = resumed_attempt(cmd, base_url, results, env)
    return {"cache": cached, "trial": n, "killed_calls": first["calls"],
            "killed_tokens": first["prompt_tokens"] + first["completion_tokens"],
            **{f"resume_{k}": v for k, v in resumed.items()}}


def table(rows: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(rows)
    lines = ["| model.cache | trials | killed attempt: calls paid | resume: calls paid | resume: from cache | "
             "resume: tokens paid | run's tokens (recorded) | resume: command wall s | resume: run wall_s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for cached, part in frame.groupby("cache", sort=False):
        med = part.median(numeric_only=True)
        lines.append(f"| {'on' if cached else 'off'} | {len(part)} | {med['killed_calls']:.0f} | "
                     f"{med['resume_calls']:.0f} of {med['resume_model_calls']:.0f} | "
                     f"{med['resume_calls_from_cache']:.0f} | {med['resume_tokens']:.0f} | {med['resume_run_tokens']:.0f} | "
                     f"{med['resume_command_wall_s']:.1f} | {med['resume_run_wall_s']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="trials per condition (medians)")
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--kill-at", type=int, default=None, help="calls answered before the kill (default: half)")
    parser.add_argument("--base-url", default=None, help="an endpoint to use instead of starting the tiny engine")
    parser.add_argument("--served-name", default="tiny")
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()
    kill_at = ns.kill_at or ns.agents * ns.rounds // 2
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        engine = None
        base_url = ns.base_url
        if base_url is None:
            from masgrid._private.actors.serving.tiny_model import build_tiny_model
            from tests.support.engine import start_engine

            build_tiny_model(work / "tiny")
            engine = start_engine(work / "tiny", work)
            base_url = engine.base_url
        try:
            for n in range(ns.repeat):
                for cached in (True, False) if n % 2 == 0 else (False, True):
                    row = trial(base_url, ns.served_name, work, cached, ns.agents, ns.rounds, kill_at, n)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            if engine is not None:
                engine.stop()
    load = os.getloadavg()
    header = (f"Resume of a killed {ns.rounds}-round run ({ns.agents} agents, {ns.agents * ns.rounds} calls; killed "
              f"after {kill_at} answered), tiny model on vLLM's CPU build; medians of {ns.repeat} trials per "
              f"condition, alternating; {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load average "
              f"{load[0]:.1f} at the end.")
    text = f"{header}\n\n{table(rows)}\n\nTrials:\n\n" + "\n".join(f"    {json.dumps(r)}" for r in rows) + "\n"
    print(text)
    if ns.out:
        ns.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
