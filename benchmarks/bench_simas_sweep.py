"""Wall time of a SIMAS sweep against a latency-bound server, as users launch it (`masgrid run -m`).

    PYTHONPATH=. python benchmarks/bench_simas_sweep.py --concurrency 4,16,32 --repeat 3 \\
        --out benchmarks/results/simas_sweep.md

The sequential schedule makes one model call at a time within a run, so a sweep is fast only
if many runs share the server: `sweep.max_concurrent=C` keeps C runs in flight. A loopback
server (benchmarks/simas_latency_server.py) answers every call after `base + per_token x
completion tokens` seconds. Each run's critical path is the sum of its own call latencies,
known exactly from its runs row (`model_calls * base + per_token * tokens_out`: the server
reports the word count it slept on). The ideal wall time of the sweep is the sum of the
critical paths divided by C (no overhead, perfect packing).

Reported per C (medians over --repeat sweeps, each into a fresh results_dir and a fresh
`masgrid run -m` process, so Ray start-up is included as a user sees it; with --head the
sweeps join a `masgrid up` head instead, warmed by one unmeasured sweep per C, as a
researcher's second and later sweeps of a session run):
- efficiency = ideal / wall, wall = the whole command (Ray start, planning, recording);
- span efficiency = ideal / span, span = the server's first request to its last reply
  (what the sweep's concurrency achieves once it is running); before first call and after
  last reply: the rest of the wall time (start-up: Ray, planning, preflight; the end:
  recording, shutting Ray down);
- packing bound = ideal / the wall of a zero-overhead list schedule of the same runs in the
  order they started (the tail: the last runs of a sweep run with fewer than C beside them);
- longest-first bound = the same with the runs started longest first (what ordering the grid
  by expected cost, n descending, could recover);
- mean in flight = server busy time (sum of call latencies) / span: calls in flight on average;
- run startup = median over runs of startup_s (driver start until its actors are ready);
- per-call overhead = median over runs of (wall_s - startup_s - critical path) / model_calls:
  the platform's time per turn beyond the server's latency (RPCs, recording, waiting for CPU);
- CPU = CPU seconds of the command's process tree (Ray included) / wall: cores used.
"""

from __future__ import annotations

import argparse
import heapq
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simas_latency_server import CallLog, Latency, LatencyServer

ROOT = Path(__file__).resolve().parent.parent


def sweep_command(base_url: str, results_dir: str, concurrency: int, ns: argparse.Namespace) -> list[str]:
    """The `masgrid run -m` line a user would type (the grid: agents x subjects x questions)."""
    return [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m",
            "task=simas/mmlu", "protocol=groupchat", f"agents={ns.agents}", f"simas.subject={ns.subjects}",
            f"simas.question=range(0,{ns.questions})", f"simas.rounds={ns.rounds}", f"simas.profiles={ns.profiles}",
            "backend=openai", "model=local_vllm", "model.served_name=bench", f"model.base_url={base_url}", "model.max_retries=0",
            "execution.token_counter=approx", f"results_dir={results_dir}",
            f"sweep.max_concurrent={concurrency}", "sweep.progress=off", f"sweep.reuse_actors={ns.reuse}",
            *ns.set]


class TreeCpu:
    """CPU seconds of a process and all its descendants, sampled until stopped."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.seen: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(0.5):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for p in procs:
                try:
                    t = p.cpu_times()
                    self.seen[p.pid] = t.user + t.system
                    self.names[p.pid] = (p.cmdline()[0] if p.cmdline() else p.name())[-50:]
                except psutil.Error:
                    pass

    def total(self) -> float:
        self.stop.set()
        self.thread.join()
        return sum(self.seen.values())

    def by_name(self) -> dict[str, float]:
        """CPU seconds per process title (Ray names its workers ray::<Actor>), largest first."""
        out: dict[str, float] = {}
        for pid, cpu in self.seen.items():
            name = self.names.get(pid, "?")
            out[name] = out.get(name, 0.0) + cpu
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def start_head() -> dict[str, str]:
    """`masgrid up` in a Ray temp dir of its own (no other cluster on the machine is joined);
    the environment variables a sweep needs to join it."""
    head = {"RAY_TMPDIR": tempfile.mkdtemp(prefix="mgb", dir="/tmp")}  # short: Ray's socket paths
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", **head}
    env.pop("RAY_ADDRESS", None)
    subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "up"], cwd=ROOT, env=env, check=True)
    return head


def stop_head(head: dict[str, str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", **head}
    subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "down"], cwd=ROOT, env=env, check=False)


def list_schedule(paths: list[float], concurrency: int) -> float:
    """Makespan of running the given durations in order, each as soon as one of C slots frees."""
    slots = [0.0] * concurrency
    for d in paths:
        heapq.heappush(slots, heapq.heappop(slots) + d)
    return max(slots)


def one_sweep(concurrency: int, ns: argparse.Namespace, latency: Latency, head: dict[str, str] | None = None) -> dict:
    """One `masgrid run -m` sweep into a fresh results_dir against a fresh server; its figures.
    `head`: the environment of a running `masgrid up` head the sweep joins."""
    with LatencyServer(latency, tokens=ns.tokens) as server, \
            tempfile.TemporaryDirectory(prefix=f"bench_simas_c{concurrency}_") as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", **(head or {})}
        t0 = time.monotonic()
        proc = subprocess.Popen(sweep_command(server.base_url, tmp, concurrency, ns), cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cpu = TreeCpu(proc.pid)
        out, _ = proc.communicate()
        end = time.monotonic()
        cpu_s = cpu.total()
        if ns.breakdown:
            print({k: round(v, 1) for k, v in list(cpu.by_name().items())[:12]}, flush=True)
        if proc.returncode != 0:
            raise SystemExit(f"sweep failed (exit {proc.returncode}):\n{out[-3000:]}")
        runs = pd.read_parquet(Path(tmp) / "runs").sort_values("started_at")
    row = figures(runs, server.log, latency, concurrency, t0, end)
    return {**row, "cpu_cores": cpu_s / row["wall_s"]}


def figures(runs: pd.DataFrame, log: CallLog, latency: Latency, concurrency: int, t0: float, end: float) -> dict:
    """The sweep's figures from its runs table (in start order) and the server's call log."""
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        raise SystemExit(f"{len(bad)} run(s) not ok: {bad[['status', 'error']].to_dict('records')[:3]}")
    path = runs["model_calls"] * latency.base_s + runs["tokens_out"] * latency.per_token_s
    paths = path.tolist()
    busy = sum(c[2] for c in log.calls)
    if abs(busy - sum(paths)) > 1e-6 * max(1.0, busy) or len(log.calls) != int(runs["model_calls"].sum()):
        raise SystemExit(f"server log ({len(log.calls)} calls, {busy:.3f} s) disagrees with the runs table "
                         f"({int(runs['model_calls'].sum())} calls, {sum(paths):.3f} s)")
    ideal = sum(paths) / concurrency
    first, last = min(c[0] for c in log.calls), max(c[1] for c in log.calls)
    overhead = ((runs["wall_s"] - runs["startup_s"] - path) / runs["model_calls"]).median()
    return {"C": concurrency, "runs": len(runs), "calls": len(log.calls), "ideal_s": ideal, "wall_s": end - t0,
            "efficiency": ideal / (end - t0), "lead_s": first - t0, "trail_s": end - last, "span_s": last - first,
            "span_efficiency": ideal / (last - first),
            "packing_bound": ideal / list_schedule(paths, concurrency),
            "lpt_bound": ideal / list_schedule(sorted(paths, reverse=True), concurrency),
            "mean_in_flight": busy / (last - first), "max_in_flight": log.max_in_flight,
            "startup_s": float(runs["startup_s"].median()), "call_overhead_s": float(overhead)}


COLUMNS = {"C": "C", "runs": "runs", "calls": "calls", "ideal_s": "ideal s", "wall_s": "wall s",
           "efficiency": "ideal/wall", "lead_s": "before first call s",
           "trail_s": "after last reply s", "span_s": "span s", "span_efficiency": "ideal/span",
           "packing_bound": "packing bound", "lpt_bound": "longest-first bound",
           "mean_in_flight": "mean in flight", "max_in_flight": "max in flight",
           "startup_s": "run startup s", "call_overhead_s": "overhead per call s", "cpu_cores": "CPU cores"}


def summarize(rows: list[dict]) -> pd.DataFrame:
    """Medians over repeats, one row per C."""
    frame = pd.DataFrame(rows)
    med = frame.groupby("C", sort=True).median(numeric_only=True).reset_index()
    med["repeats"] = frame.groupby("C", sort=True).size().values
    for col in ("runs", "calls", "max_in_flight"):
        med[col] = med[col].round().astype(int)
    return med.rename(columns=COLUMNS)[[*COLUMNS.values(), "repeats"]].round(3)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="4,16,32", help="comma list of sweep.max_concurrent")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--agents", default="1,2,4,6,8", help="the sweep's agents values (n)")
    ap.add_argument("--subjects", default="college_physics,abstract_algebra")
    ap.add_argument("--questions", type=int, default=10, help="questions per subject")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profiles", default="pool", choices=("pool", "generate"))
    ap.add_argument("--reuse", default="true", choices=("true", "false"), help="sweep.reuse_actors")
    ap.add_argument("--tokens", type=int, default=40, help="words per discussion reply")
    ap.add_argument("--base-s", type=float, default=0.05)
    ap.add_argument("--per-token-s", type=float, default=0.01)
    ap.add_argument("--breakdown", action="store_true", help="print CPU seconds per process title")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    ap.add_argument("--set", action="append", default=[], help="extra override for the sweep, e.g. "
                    "execution.status_actor_after_s=null (repeatable)")
    ap.add_argument("--head", action="store_true", help="sweeps join a `masgrid up` head (its own Ray temp dir), "
                    "after one unmeasured sweep per C has left its warm processes there")
    ns = ap.parse_args(argv)
    latency = Latency(ns.base_s, ns.per_token_s)
    rows = []
    head = start_head() if ns.head else None
    try:
        if head is not None:
            for c in (int(x) for x in ns.concurrency.split(",")):
                one_sweep(c, ns, latency, head)  # warms the head: a slot's driver and hosts per C
        for _ in range(ns.repeat):
            for c in (int(x) for x in ns.concurrency.split(",")):
                rows.append(one_sweep(c, ns, latency, head))
                print({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}, flush=True)
    finally:
        if head is not None:
            stop_head(head)
    table = summarize(rows).to_markdown(index=False)
    setting = (("sweeps join a warm `masgrid up` head (CPU cores: the command's process only, the workers are "
                "the head's); " if ns.head else "cold start (each sweep starts Ray); ") +
               f"grid: agents={ns.agents}, subjects={ns.subjects}, {ns.questions} questions each, T={ns.rounds}, "
               f"profiles={ns.profiles}, sweep.reuse_actors={ns.reuse}; latency {ns.base_s} s + {ns.per_token_s} s "
               f"per output token, {ns.tokens}-word turns; medians over {ns.repeat} sweep(s) per C")
    print(f"\n{setting}\n\n{table}")
    if ns.out:
        ns.out.write_text(f"{setting}\n\n{table}\n")


if __name__ == "__main__":
    main()
