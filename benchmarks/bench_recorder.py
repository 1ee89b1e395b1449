"""Recorder throughput for a 1,000-agent x 40-round run with several events per model call.

The events are built by the driver's own `RunLog` (platform/run/driver.py) from synthetic
replies, so every row has the shape and the columns a real run records: per agent and
round one observation, one model call and `--commands` commands with their replies, plus a
prompt per agent. They are then written the way a run writes them: one `write_events`
chunk every 10 rounds (driver.EVENT_FLUSH_ROUNDS), by an in-process `Recorder`.

Reported (median of --repeats):
- recorder rows/s: rows / seconds spent in `Recorder.write_events` (rows to Arrow, Parquet,
  fsync, rename), and separately the seconds to pickle each chunk, which is what sending it
  to the recorder actor adds (Ray serialises the call's arguments);
- bytes/event on disk: Parquet bytes of the events table / rows;
- peak memory: the Python allocation peak (tracemalloc) while writing the largest chunk,
  the peak of Arrow's memory pool, and the process's peak RSS (row building included);
- the production side: rows/s the driver's RunLog builds the same events at (an upper
  bound of what any run can produce, since a run also waits for models and actors), and
  the events/s a 1,000-agent round produces at the issue's round-overhead target (one
  round of 1,000 calls in 0.5 s beyond the model).

    python benchmarks/bench_recorder.py --repeats 3 --out benchmarks/results/recorder.md
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import resource
import shutil
import statistics
import tempfile
import time
import tracemalloc

import pyarrow as pa
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

from masgrid._private.actors.backends import Completion
from masgrid._private.actors.environment import OutcomeRecord
from masgrid._private.platform.run.driver import EVENT_FLUSH_ROUNDS, RunLog
from masgrid._private.platform.results.recorder import Recorder

from figures_header import emit, machine_line  # benchmarks/ (run as a script)

WORDS = ("send", "receive", "value", "agent", "sorted", "list", "the", "my", "next", "round", "write", "read",
         "file", "number", "merge", "position", "check", "done", "neighbour", "message")


def text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS) if rng.random() > 0.2 else str(rng.randrange(10_000))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def build_round(log: RunLog, rng: random.Random, agents: int, round_no: int, commands: int) -> None:
    """One lockstep round of the driver's events for `agents` agents."""
    log.record_observations(1, {i: [text(rng, 300)] for i in range(agents)}, round_no)
    now = time.time()
    completions = {i: Completion(text=text(rng, 600), tokens_in=900 + i % 50, tokens_out=150, usage_source="server",
                                 latency_s=0.8, started_at=now, attempts=1) for i in range(agents)}
    outcomes = {i: [OutcomeRecord(agent=i, kind="command", verb="send", block=text(rng, 60), reply=text(rng, 200),
                                  ok=True, communication=True, tokens_comm=60, messages_sent=1, deliveries=1,
                                  peers=[(i + 1) % agents]) for _ in range(commands)] for i in range(agents)}
    log.record_round(1, round_no, completions, outcomes)


def one_repeat(args: argparse.Namespace, root: Path) -> dict[str, float]:
    rng = random.Random(0)
    partition = {"task": "sorting", "protocol": "p2p"}
    log = RunLog("bench0000000000", partition, args.agents, labels={"experiment": "bench", "tags": ["perf"]},
                 max_recorded_chars=1_000_000, event_flush_bytes=None)
    recorder = Recorder(root)
    build_s = write_s = write_cpu_s = pickle_s = 0.0
    rows_total = 0
    largest: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal write_s, write_cpu_s, pickle_s, rows_total, largest
        chunk, rows = log.take_chunk()
        c = time.process_time()
        pickle.dumps(rows, protocol=5)
        pickle_s += time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        recorder.write_events(log.run_id, partition, chunk, rows)
        write_s += time.perf_counter() - t
        write_cpu_s += time.process_time() - c
        rows_total += len(rows)
        largest = max(largest, rows, key=len)

    # Arrow's first conversion in a process pays a one-time set-up (about 0.4 s of CPU here);
    # a recorder actor pays it once for all the runs it records, so it is left out of the rates
    recorder.write_events("warmup", partition, 0, [{"seq": 0, "text": "x", "time": datetime.now(UTC)}])
    c = time.process_time()
    log.record_prompts(1, {i: text(rng, 1500) for i in range(args.agents)})
    build_s += time.process_time() - c
    for round_no in range(1, args.rounds + 1):
        c = time.process_time()
        build_round(log, rng, args.agents, round_no, args.commands)  # synthetic replies included
        build_s += time.process_time() - c
        if round_no % EVENT_FLUSH_ROUNDS == 0:
            flush()
    if log.pending:
        flush()
    disk = sum(p.stat().st_size for p in (root / "events").rglob(f"part-{log.run_id}-*.parquet"))
    tracemalloc.start()  # apart from the timing: tracing allocations slows Python several times
    recorder.write_events(log.run_id, partition, 99_999, largest)
    peak_alloc = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"rows": rows_total, "write_rows_per_s": rows_total / write_s, "write_rows_per_cpu_s": rows_total / write_cpu_s,
            "pickle_rows_per_s": rows_total / pickle_s, "build_rows_per_s": rows_total / build_s,
            "bytes_per_event": disk / rows_total, "peak_alloc_mb": peak_alloc / 2**20, "write_s": write_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--commands", type=int, default=2, help="commands (with replies) per model call")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--round-overhead-s", type=float, default=0.5,
                    help="seconds one round of N calls takes beyond the model (the issue's target)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    load_before = os.getloadavg()
    results = []
    for rep in range(args.repeats):
        root = Path(tempfile.mkdtemp(prefix="bench-recorder-"))
        try:
            results.append(one_repeat(args, root))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(f"repeat {rep + 1}: " + ", ".join(f"{k} {v:,.1f}" for k, v in results[-1].items()), flush=True)
    load_after = os.getloadavg()
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_call = 2 + args.commands  # observation + model_call + commands
    produced = args.agents * per_call / args.round_overhead_s
    lines = [
        f"# Recorder throughput (`bench_recorder.py`, {args.agents} agents x {args.rounds} rounds, "
        f"{per_call} events per model call)", "",
        f"{machine_line(load_before, load_after)}. Medians of {args.repeats} repeats.", "",
        "| measure | value |", "|---|---:|",
        f"| event rows per run | {med['rows']:,.0f} |",
        f"| recorder: rows/s written (Arrow + Parquet + fsync), wall | {med['write_rows_per_s']:,.0f} |",
        f"| recorder: rows per CPU second of this process | {med['write_rows_per_cpu_s']:,.0f} |",
        f"| recorder: seconds for the whole run's events | {med['write_s']:.2f} |",
        f"| pickling the chunks for the actor call (driver side): rows per CPU second | {med['pickle_rows_per_s']:,.0f} |",
        f"| bytes per event on disk (Parquet) | {med['bytes_per_event']:.1f} |",
        f"| peak Python allocation while writing the largest chunk (MB) | {med['peak_alloc_mb']:.0f} |",
        f"| peak of Arrow's memory pool, whole process (MB) | {pa.default_memory_pool().max_memory() / 2**20:.0f} |",
        f"| peak RSS of the benchmark process (MB) | {rss_mb:.0f} |",
        f"| production: rows per CPU second of building them (RunLog + synthetic replies) | "
        f"{med['build_rows_per_s']:,.0f} |",
        f"| production: rows/s of a run at {args.round_overhead_s} s per {args.agents}-call round | {produced:,.0f} |",
        f"| recorder CPU rate / building rate | {med['write_rows_per_cpu_s'] / med['build_rows_per_s']:.1f}x |",
        f"| recorder CPU rate / rows of {args.round_overhead_s} s rounds | {med['write_rows_per_cpu_s'] / produced:.1f}x |",
        f"| recorder wall rate / rows of {args.round_overhead_s} s rounds | {med['write_rows_per_s'] / produced:.1f}x |",
    ]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
