"""CPU of every process a command started, short-lived ones included: where `cpu_by_process.py`
samples /proc and misses processes shorter than its interval (a `masgrid` subprocess, a pip,
a Ray worker that lives two seconds), the kernel's process accounting records each process as
it exits, with its parent. This sums a `dump-acct` listing by command name, by the subtree of
given processes (a pytest worker, a raylet) and lists the costliest processes.

    apt-get install -y acct; touch /tmp/pacct; accton /tmp/pacct
    make test; accton off; dump-acct /tmp/pacct > acct.txt
    python benchmarks/cpu_by_command.py acct.txt [--root PID=NAME ...]

A process is named by its last thread's name (`ray::IDLE` for a Ray worker whose actor ended,
a gRPC thread's name for a raylet), and only processes that exited are listed: stop the
accounting after the command has ended. Kernel threads do not appear.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: dump-acct's ticks per second (AHZ)
TICKS = 100.0


@dataclass(frozen=True)
class Exited:
    command: str
    cpu_s: float
    wall_s: float
    pid: int
    ppid: int


def parse(text: str) -> list[Exited]:
    """dump-acct's lines (`comm|v3|utime|stime|etime|uid|gid|mem|io|pid|ppid|...`)."""
    out = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 11 or fields[1] != "v3":
            continue
        out.append(Exited(fields[0], (float(fields[2]) + float(fields[3])) / TICKS, float(fields[4]) / TICKS,
                          int(fields[9]), int(fields[10])))
    return out


def by_root(processes: list[Exited], roots: dict[int, str]) -> dict[str, tuple[int, float]]:
    """(processes, CPU-s) under each named root (the root itself included), the rest as `other`.
    A pid the system reused is read as its last holder."""
    parent = {p.pid: p.ppid for p in processes}

    def root_of(p: Exited) -> str:
        pid, hops = p.pid, 0
        while pid and hops < 64:
            if pid in roots:
                return roots[pid]
            pid, hops = parent.get(pid, 0), hops + 1
        return "other"

    return _totals(processes, root_of)


def by_command(processes: list[Exited]) -> dict[str, tuple[int, float]]:
    return _totals(processes, lambda p: p.command)


def _totals(processes: list[Exited], key: Callable[[Exited], str]) -> dict[str, tuple[int, float]]:
    """(processes, CPU-s) by `key`."""
    count: collections.Counter[str] = collections.Counter()
    cpu: dict[str, float] = collections.defaultdict(float)
    for p in processes:
        name = key(p)
        count[name] += 1
        cpu[name] += p.cpu_s
    return {name: (count[name], cpu[name]) for name in count}


def report(processes: list[Exited], roots: dict[int, str], top: int = 25) -> str:
    total = sum(p.cpu_s for p in processes)
    lines = [f"{len(processes):,} processes exited, {total:,.0f} CPU-s", ""]

    def table(title: str, rows: dict[str, tuple[int, float]]) -> None:
        lines.extend([f"| {title} | processes | CPU s |", "|---|---:|---:|"])
        for name, (n, cpu) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
            lines.append(f"| {name} | {n:,} | {cpu:,.1f} |")
        lines.append("")

    if roots:
        table("under", by_root(processes, roots))
    table("command", by_command(processes))
    lines.extend(["| process | pid | parent | CPU s | lived s |", "|---|---:|---:|---:|---:|"])
    for p in sorted(processes, key=lambda p: -p.cpu_s)[:top]:
        lines.append(f"| {p.command} | {p.pid} | {p.ppid} | {p.cpu_s:,.1f} | {p.wall_s:,.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", type=Path, help="dump-acct's output")
    parser.add_argument("--root", action="append", default=[], metavar="PID=NAME",
                        help="sum the subtree of this process under NAME (repeatable)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    roots = {}
    for spec in args.root:
        pid, _, name = spec.partition("=")
        roots[int(pid)] = name or pid
    print(report(parse(args.dump.read_text(errors="replace")), roots, args.top), end="")


if __name__ == "__main__":
    main()
