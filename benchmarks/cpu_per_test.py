"""CPU per test file: where the suite's CPU goes, not its wall time (`--durations` mostly
shows waits). A pytest plugin that reads the machine's busy CPU time (/proc/stat, every
process: Ray workers, engines and subprocesses included) around each test, and a summary.

    PYTHONPATH=.:benchmarks python -m pytest -p cpu_per_test -q tests/...   # writes cpu_per_test.jsonl
    python benchmarks/cpu_per_test.py cpu_per_test.jsonl [--out benchmarks/results/cpu_per_test.md]

Only meaningful in one process on an otherwise idle machine: everything the machine does
while a test runs is counted against that test (MASGRID_CPU_LOG names another output file).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_HZ = os.sysconf("SC_CLK_TCK")


def busy_cpu_s() -> float:
    """Seconds of CPU the whole machine has spent outside idle and iowait since boot."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / _HZ


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall = busy_cpu_s(), time.monotonic()
    yield
    record = {"nodeid": item.nodeid, "wall_s": round(time.monotonic() - wall, 3),
              "cpu_s": round(busy_cpu_s() - cpu, 2)}
    with Path(os.environ.get("MASGRID_CPU_LOG", "cpu_per_test.jsonl")).open("a") as out:
        out.write(json.dumps(record) + "\n")


def summary(records: list[dict[str, Any]], top: int = 30) -> str:
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in records:
        entry = files[r["nodeid"].split("::", 1)[0]]
        entry[0] += r["cpu_s"]
        entry[1] += r["wall_s"]
        entry[2] += 1
    cpu = sum(v[0] for v in files.values())
    wall = sum(v[1] for v in files.values())
    lines = [f"{len(records)} tests in {len(files)} files: {cpu:,.0f} CPU-s in {wall:,.0f} s "
             f"({cpu / wall / (os.cpu_count() or 1):.0%} of {os.cpu_count()} cores)", "",
             "| file | tests | CPU s | wall s | cores busy |", "|---|---:|---:|---:|---:|"]
    for name, (c, w, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"| {name} | {n} | {c:,.0f} | {w:,.0f} | {c / w if w else 0:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--top", type=int, default=30)
    ns = parser.parse_args()
    text = summary([json.loads(line) for line in ns.log.read_text().splitlines() if line.strip()], ns.top)
    print(text)
    if ns.out:
        ns.out.write_text(text)


if __name__ == "__main__":
    main()
