"""CPU by kind of process while something runs (a test suite, a sweep): which processes spend
the machine's CPU, where `cpu_per_test.py` can only say which test was running. Samples
/proc every few seconds, names each process by its command line (Ray actors by class, vLLM's
processes, Ray's per-session daemons, kernel threads) and writes the CPU each kind used
since the sampler started.

    python benchmarks/cpu_by_process.py OUT.json --seconds 2400 &   # then start the suite

Processes shorter than one interval are missed, and a process is counted under the name it
had when last seen (a Ray worker starts as `ray::IDLE` and is renamed when it hosts an actor).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import time
from pathlib import Path

_HZ = os.sysconf("SC_CLK_TCK")
_DAEMONS = ("raylet", "gcs_server", "dashboard", "log_monitor", "runtime_env", "monitor.py", "default_worker.py",
            "vllm.entrypoints", "masgrid", "bwrap", "git", "chrom")


def kind_of(pid: str) -> str | None:
    """A short name for the process: None if it is gone."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    if not cmd:
        return "kernel threads"
    if cmd.startswith("ray::"):
        name = cmd.split()[0][5:]
        if name.startswith("ServeReplica"):
            return "ray::ServeReplica:" + name.split(":")[-1].split(".")[0]
        return "ray::" + re.sub(r"[:.].*", "", name)
    if cmd.startswith("VLLM::"):
        return cmd.split()[0]
    if "pytest" in cmd:
        return "pytest"
    return next((d for d in _DAEMONS if d in cmd), cmd.split()[0].rsplit("/", 1)[-1][:30])


def sample(seen: dict[tuple[str, str], list]) -> None:
    """Update `seen`, (pid, start time) -> [kind, CPU ticks when first seen, CPU ticks now]."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        ticks, key = int(fields[11]) + int(fields[12]), (pid, fields[19])
        kind = kind_of(pid)
        if key not in seen:
            if kind is not None:
                seen[key] = [kind, ticks, ticks]
        else:
            seen[key][2] = ticks
            if kind is not None:
                seen[key][0] = kind


def totals(seen: dict[tuple[str, str], list], started: set[tuple[str, str]]) -> list[tuple[str, float]]:
    """CPU-s by kind since the start: a process alive at the start counts from then on."""
    out: collections.Counter[str] = collections.Counter()
    for key, (kind, first, last) in seen.items():
        out[kind] += (last - (first if key in started else 0)) / _HZ
    return [(k, round(v, 1)) for k, v in out.most_common()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--every", type=float, default=3.0)
    args = parser.parse_args()
    seen: dict[tuple[str, str], list] = {}
    sample(seen)
    started = set(seen)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        time.sleep(args.every)
        sample(seen)
        args.out.write_text(json.dumps(totals(seen, started), indent=1))


if __name__ == "__main__":
    main()
