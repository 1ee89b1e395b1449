"""Peak memory of a run against the size of the model's replies.

    PYTHONPATH=. python benchmarks/bench_memory.py --sizes-mb 1,10,30 --agents 5 --rounds 4 --repeats 3

A loopback OpenAI-compatible server (tests/support/chat_server.py, in a process of its
own so its buffers are not counted) answers every call with one small command followed
by SIZE MB of filler text, so each model_call event carries SIZE MB. Each size runs in a
fresh Python process with its own local Ray; one sorting run (broadcast, AGENTS agents,
ROUNDS rounds, backend openai) is repeated REPEATS times. A sampler reads, every 0.1 s, the
proportional set size (PSS: shared pages such as Ray's object store split between the
processes that map them) of this process and of every Ray worker it started (run driver,
agent host, environment, recorder, idle workers). Reported per size: that sum while Ray
idles before the first run, the median over repeats of its peak during a run, and of the
largest single process.

Run it against two checkouts to compare (PYTHONPATH picks the tree): on a tree that has
execution.max_recorded_chars / event_flush_bytes their defaults apply, and --uncapped
turns both off. Results go to stdout as a Markdown table and to --json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20


def serve(size_mb: float, port_out: Any) -> None:
    """The chat server process: every reply is a command plus size_mb MB of filler."""
    sys.path.insert(0, str(ROOT))
    from tests.support.chat_server import ChatServer, Reply

    text = "```\nreceive_messages\n```\n" + "z" * int(size_mb * MB)
    with ChatServer(lambda request: Reply(text, usage=True)) as server:
        port_out.send(server.base_url)
        threading.Event().wait()


class Sampler:
    """Peak PSS of this process plus its Ray workers (processes named ray::*), sampled."""

    def __init__(self, exclude: set[int], interval_s: float = 0.1) -> None:
        self.exclude, self.interval_s = exclude, interval_s
        self.peak_sum = self.peak_one = 0
        self.by_name: dict[str, int] = {}  # peak PSS per process title (ray::RunDriver, ...)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _processes(self) -> list[psutil.Process]:
        me = psutil.Process()
        out = [me]
        for child in me.children(recursive=True):
            try:
                if child.pid not in self.exclude and child.name().startswith("ray::"):
                    out.append(child)
            except psutil.Error:
                pass
        return out

    def _loop(self) -> None:
        while not self._stop.is_set():
            sizes = []
            for proc in self._processes():
                try:
                    pss, name = proc.memory_full_info().pss, proc.name()
                except psutil.Error:
                    continue
                sizes.append(pss)
                self.by_name[name] = max(self.by_name.get(name, 0), pss)
            self.peak_sum = max(self.peak_sum, sum(sizes))
            self.peak_one = max(self.peak_one, max(sizes, default=0))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(size_mb: float, agents: int, rounds: int, repeats: int, uncapped: bool) -> dict[str, Any]:
    """One size, in this process: start the server and Ray, run REPEATS times, report medians.
    masgrid comes from PYTHONPATH, so the same script measures any checkout."""
    from masgrid._private.platform.run.config import ExecutionSettings, RunConfig
    from masgrid._private.platform.cluster.ray_session import ensure_ray

    from masgrid._private.platform.sweeps.ray_runs import run_one
    parent, child = mp.Pipe()
    server = mp.get_context("spawn").Process(target=serve, args=(size_mb, child), daemon=True)
    server.start()
    base_url = parent.recv()
    ensure_ray(None, num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    capped = "max_recorded_chars" in ExecutionSettings.model_fields
    execution: dict[str, Any] = {}
    if capped and uncapped:
        execution = {"max_recorded_chars": None, "event_flush_bytes": 2**62}
    peaks_sum, peaks_one, walls, by_name = [], [], [], {}
    time.sleep(2)  # let Ray's prestarted workers settle before the idle figure
    with Sampler(exclude={server.pid}) as idle:
        time.sleep(0.5)
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        for rep in range(repeats):
            cfg = RunConfig.from_mapping({
                "task": "sorting", "protocol": "broadcast", "agents": agents, "k": 2, "max_rounds": rounds,
                "seed": rep, "backend": "openai", "preflight": False, "results_dir": tmp, "execution": execution,
                "model": {"name": "bench", "base_url": base_url, "max_retries": 0, "timeout_s": 300}})
            with Sampler(exclude={server.pid}) as sampler:
                t0 = time.perf_counter()
                summary = run_one(cfg)
                walls.append(time.perf_counter() - t0)
            if summary.status == "failed":
                raise SystemExit(f"run failed: {summary.error}")
            peaks_sum.append(sampler.peak_sum)
            peaks_one.append(sampler.peak_one)
            for name, pss in sampler.by_name.items():
                by_name.setdefault(name, []).append(pss)
        events_mb = sum(p.stat().st_size for p in Path(tmp, "events").rglob("*.parquet")) / MB / repeats
    server.kill()
    return {"reply_mb": size_mb, "agents": agents, "rounds": rounds, "repeats": repeats,
            "recording": "uncapped" if (uncapped or not capped) else "capped",
            "idle_sum_mb": round(idle.peak_sum / MB), "peak_sum_mb": round(statistics.median(peaks_sum) / MB),
            "peak_process_mb": round(statistics.median(peaks_one) / MB),
            "reply_text_mb": round(size_mb * agents * rounds),
            "events_parquet_mb": round(events_mb, 1), "run_wall_s": round(statistics.median(walls), 1),
            "peak_by_process_mb": {name: round(statistics.median(v) / MB) for name, v in sorted(by_name.items())}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mb", default="1,10,30")
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--uncapped", action="store_true", help="turn the recording cap and the byte budget off")
    ap.add_argument("--one", type=float, default=None, help=argparse.SUPPRESS)  # child: measure one size
    ap.add_argument("--json", type=Path, default=None)
    ns = ap.parse_args()
    if ns.one is not None:
        print(json.dumps(measure(ns.one, ns.agents, ns.rounds, ns.repeats, ns.uncapped)), flush=True)
        return
    rows = []
    for size in (float(s) for s in ns.sizes_mb.split(",")):
        cmd = [sys.executable, __file__, "--one", str(size), "--agents", str(ns.agents), "--rounds", str(ns.rounds),
               "--repeats", str(ns.repeats)] + (["--uncapped"] if ns.uncapped else [])
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    import pandas as pd

    print("\n" + pd.DataFrame(rows).drop(columns="peak_by_process_mb").to_markdown(index=False))
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
