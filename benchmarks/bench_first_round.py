"""Seconds from `masgrid run` to its first round, cold and with a Ray head already running.

Each timed run is a fresh `python -m masgrid._private.platform.commands.cli run` process (a 10-agent scripted
sorting run by default). The clock starts just before the process is spawned; the first
round starts when its first model call went out (`call_started`, the earliest of the run's
model_call events), read back from the run's Parquet events. Also reported: when the driver
began the run (`runs.started_at`), when the process exited, and the CPU seconds the command's
own process used (user + system; Ray's processes not included), which load does not inflate.

Settings, interleaved per repeat so a load change hits all of them alike:
- cold: no head running; the command starts its own Ray, as the README's first command does;
- joined, fresh: a head is running (`masgrid up`), `execution.keep_warm=false`: the command
  joins it but starts its own driver, recorder and host processes;
- warm: a head is running and a previous command left its warm actors (the default).

The benchmark uses a Ray temp directory of its own (RAY_TMPDIR), so it neither joins nor
stops anyone else's cluster. Bytecode: this project's development environment sets
PYTHONDONTWRITEBYTECODE=1, so every process compiles every module it imports; an installed
package has its bytecode. `--bytecode cache` (default) lets the commands keep bytecode under
a private PYTHONPYCACHEPREFIX after an untimed first run; `--bytecode none` measures without.

    python benchmarks/bench_first_round.py --repeats 5 --out benchmarks/results/first_round.md
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from figures_header import emit, machine_line  # benchmarks/ (run as a script)

REPO = Path(__file__).resolve().parent.parent
SETTINGS = ("cold", "joined, fresh", "warm")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def masgrid(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], env=env, cwd=REPO,
                          capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"masgrid {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


def timed_run(env: dict[str, str], results: Path, agents: int, *extra: str) -> dict[str, float]:
    """Seconds from spawning the command to: driver start, first round, process exit."""
    shutil.rmtree(results, ignore_errors=True)
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    masgrid(env, "run", f"agents={agents}", f"results_dir={results}", *extra)
    t_exit = time.time() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    events = pd.read_parquet(results / "events", columns=["kind", "call_started"])
    runs = pd.read_parquet(results / "runs", columns=["started_at", "status"])
    if runs["status"].iloc[0] != "ok":
        raise RuntimeError(f"run status {runs['status'].iloc[0]}")
    first = events.loc[events["kind"] == "model_call", "call_started"].min().timestamp()
    return {"driver_start_s": runs["started_at"].iloc[0].timestamp() - t0, "first_round_s": first - t0,
            "exit_s": t_exit, "cpu_s": cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cold-repeats", type=int, default=None, help="cold runs (default: --repeats)")
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--bytecode", choices=("cache", "none"), default="cache")
    ap.add_argument("--out", type=Path, default=None, help="Markdown table to write")
    args = ap.parse_args()
    cold_repeats = args.repeats if args.cold_repeats is None else args.cold_repeats

    scratch = Path(tempfile.mkdtemp(prefix="mfr-", dir="/tmp"))  # short: Ray's socket paths live here
    env = {**os.environ, "RAY_TMPDIR": str(scratch), "RAY_AUTH_MODE": "disabled",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("RAY_ADDRESS", None)
    if args.bytecode == "cache":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    results = scratch / "results"
    samples: dict[str, list[dict[str, float]]] = {s: [] for s in SETTINGS}
    load_before = os.getloadavg()
    port = free_port()
    try:
        timed_run(env, results, args.agents)  # untimed: bytecode written, page cache warm
        for rep in range(max(args.repeats, cold_repeats)):
            if rep < cold_repeats:
                samples["cold"].append(timed_run(env, results, args.agents))
            if rep >= args.repeats:
                continue
            masgrid(env, "up", f"--port={port}")
            try:
                samples["joined, fresh"].append(timed_run(env, results, args.agents, "execution.keep_warm=false"))
                timed_run(env, results, args.agents)  # leaves the warm actors
                samples["warm"].append(timed_run(env, results, args.agents))
            finally:
                masgrid(env, "down", check=False)
            print(f"repeat {rep + 1}: " + ", ".join(f"{s} {v[-1]['first_round_s']:.2f} s" for s, v in samples.items()
                                                     if v), flush=True)
    finally:
        masgrid(env, "down", check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()

    lines = [f"# Time to the first round (`bench_first_round.py`, {args.agents}-agent scripted sorting run)", "",
             f"{machine_line(load_before, load_after)}; bytecode: {args.bytecode}.",
             "Seconds from spawning the command; medians (min-max) of the repeats.", "",
             "| setting | runs | driver starts the run | first round starts | command exits | CPU of the command "
             "process |", "|---|---:|---:|---:|---:|---:|"]
    for setting, rows in samples.items():
        if not rows:
            continue
        cells = []
        for key in ("driver_start_s", "first_round_s", "exit_s", "cpu_s"):
            values = [r[key] for r in rows]
            cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        lines.append(f"| {setting} | {len(rows)} | " + " | ".join(cells) + " |")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
