"""What the CooperBench sandbox costs per shell command: bubblewrap vs no isolation.

Each command runs `--repeat` times in each of three ways, interleaved (so load on a shared
machine hits all three alike):
- `raw`: subprocess.run of the same argv, no limits, no capture logic (the floor);
- `none`: Sandbox(kind="none"): limits (prlimit, pids cgroup when root), capped capture;
- `bwrap`: Sandbox(kind="bwrap"): the same plus the namespaces and mounts.
Reported: median and 90th percentile wall time in ms, and the bwrap - none difference of
the medians (the isolation's own cost per command).

    python benchmarks/bench_cooper_sandbox.py --repeat 200 --out benchmarks/results/cooper_sandbox.md
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from masgrid.families.cooper.sandbox import BASE_ENV, Sandbox, SandboxSettings, interpreter_paths, sandbox_problem

COMMANDS = {
    "true": "true",
    "ls -la": "ls -la",
    "python -c pass": f"{sys.executable} -c pass",
    "grep -rn def .": "grep -rn def . | wc -l",
}


def measure(repeat: int) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="bench-sbx-") as tmp:
        root = Path(tmp)
        for i in range(50):
            (root / f"m{i}.py").write_text("".join(f"def f{j}():\n    return {j}\n" for j in range(40)))
        readable = interpreter_paths(Path(sys.executable))
        boxes = {kind: Sandbox(SandboxSettings(kind=kind), writable=[root], readable=readable)
                 for kind in ("none", "bwrap")}
        rows = []
        for label, command in COMMANDS.items():
            times: dict[str, list[float]] = {"raw": [], "none": [], "bwrap": []}
            for _ in range(repeat):
                t0 = time.perf_counter()
                subprocess.run(["/bin/bash", "-c", command], cwd=root, env=BASE_ENV, capture_output=True, check=False)
                times["raw"].append(time.perf_counter() - t0)
                for kind, box in boxes.items():
                    t0 = time.perf_counter()
                    res = box.run(command, cwd=root)
                    times[kind].append(time.perf_counter() - t0)
                    if res.exit_code != 0:
                        raise SystemExit(f"{kind}: {label!r} failed: {res.stderr.strip()[:200]}")
            row: dict[str, object] = {"command": label}
            for kind, ts in times.items():
                ts.sort()
                row[f"{kind}_median_ms"] = 1000 * statistics.median(ts)
                row[f"{kind}_p90_ms"] = 1000 * ts[int(0.9 * (len(ts) - 1))]
            row["bwrap_minus_none_ms"] = float(row["bwrap_median_ms"]) - float(row["none_median_ms"])  # type: ignore[arg-type]
            rows.append(row)
        enforcement = boxes["bwrap"].enforcement
    return [*rows, {"enforcement": enforcement}]


def render(rows: list[dict[str, object]], repeat: int) -> str:
    *table, meta = rows
    lines = [f"Per-command wall time, ms (median / p90 of {repeat} runs each, interleaved).",
             f"Limits enforced by: {meta['enforcement']}.", "",
             "| command | raw | none | bwrap | bwrap - none (medians) |", "|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| `{r['command']}` | {r['raw_median_ms']:.1f} / {r['raw_p90_ms']:.1f} "
                     f"| {r['none_median_ms']:.1f} / {r['none_p90_ms']:.1f} "
                     f"| {r['bwrap_median_ms']:.1f} / {r['bwrap_p90_ms']:.1f} | {r['bwrap_minus_none_ms']:+.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None, help="write the markdown table here too")
    args = parser.parse_args()
    problem = sandbox_problem()
    if problem:
        raise SystemExit(problem)
    text = render(measure(args.repeat), args.repeat)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
