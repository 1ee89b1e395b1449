"""Where the test suite's time goes, from a pytest log written with `--durations=0`.

    .venv/bin/python -m pytest -q --durations=0 > suite.log
    python benchmarks/suite_time.py suite.log [--out benchmarks/results/suite_time.md]

Sums setup, call and teardown per test file and per folder, and splits the time between the
files whose tests start a real engine or a Ray cluster of their own and the rest. That split
is by path (HEAVY_PARTS: the serving and model-phase folders, the cluster and engine-loss
files, `*_engine.py`), so it is approximate: a file there may hold fast tests too. The suite's wall time is pytest's own last line. Durations under
pytest's 5 ms floor are not printed by pytest and so not counted (a few seconds in all).
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

_LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+?)(?:::(\S+))?\s*$")
_WALL = re.compile(r"in (\d+(?:\.\d+)?)s(?: \(([\d:]+)\))?")

#: path parts of the test files whose tests start a vLLM engine, a Serve app or Ray clusters of their own
HEAVY_PARTS = ("tests/actors/serving/", "tests/platform/sweeps/model_phases/", "test_cluster.py", "test_multinode.py",
               "test_engine_lost.py", "_engine.py")


def parse(text: str) -> tuple[dict[str, float], float | None, str]:
    """(seconds per test file, the run's wall seconds, pytest's summary line)."""
    per_file: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            per_file[m.group(3)] += float(m.group(1))
    summary = next((line for line in reversed(text.splitlines()) if re.search(r"\b(passed|failed)\b", line)), "")
    wall = _WALL.search(summary)
    return dict(per_file), float(wall.group(1)) if wall else None, summary.strip("= ")


def heavy(path: str) -> bool:
    return any(part in path for part in HEAVY_PARTS)


def report(per_file: dict[str, float], wall: float | None, summary: str, top: int = 25) -> str:
    total = sum(per_file.values())
    folders: dict[str, float] = defaultdict(float)
    for path, seconds in per_file.items():
        folders[str(Path(path).parent)] += seconds
    heavy_s = sum(s for p, s in per_file.items() if heavy(p))
    lines = [f"pytest: {summary}", "",
             f"counted: {total:,.0f} s in {len(per_file)} files"
             + (f" (wall {wall:,.0f} s = {wall / 60:.1f} min)" if wall else ""),
             f"files with their own engine or cluster: {heavy_s:,.0f} s ({heavy_s / total:.0%}); "
             f"the rest: {total - heavy_s:,.0f} s", "",
             "| folder | s | share |", "|---|---:|---:|"]
    lines += [f"| {folder} | {s:,.0f} | {s / total:.1%} |" for folder, s in sorted(folders.items(), key=lambda x: -x[1])]
    lines += ["", f"| slowest {top} files | s | own engine or cluster |", "|---|---:|---|"]
    lines += [f"| {path} | {s:,.0f} | {'yes' if heavy(path) else ''} |"
              for path, s in sorted(per_file.items(), key=lambda x: -x[1])[:top]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--top", type=int, default=25)
    ns = parser.parse_args(argv)
    per_file, wall, summary = parse(ns.log.read_text(errors="replace"))
    if not per_file:
        parser.error(f"{ns.log}: no durations (run pytest with --durations=0)")
    text = report(per_file, wall, summary, ns.top)
    if ns.out:
        ns.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
