"""Evaluation wall time per feature pair: masgrid's merge-and-test evaluator on gold patches.

    PYTHONPATH=. python benchmarks/bench_cooper_eval.py [--repeats 2] [--sandbox bwrap none]
    PYTHONPATH=. python benchmarks/bench_cooper_eval.py --data-dir D --repos-dir R --task POOL/ID [--limit 6]

Without --task it writes the synthetic textkit pool to a temporary directory and evaluates all
of its 10 gold pairs. Per pair it reports the total wall time, the part spent in the
features' test runs (pytest inside the sandbox, both features) and the rest (scratch clone,
branches, merge stages, environment lookup). The first evaluation of a task also builds its
test environment; that build is reported separately and excluded from the per-pair figures.
Writes benchmarks/results/cooper_eval.md unless --no-write.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from masgrid.families.cooper.evaluate import evaluate_patches
from masgrid.families.cooper.layout import load_task
from masgrid.families.cooper.sandbox import Sandbox, SandboxSettings
from masgrid.families.cooper.synthetic import write_synthetic_pool

OUT = Path(__file__).resolve().parent / "results" / "cooper_eval.md"


def measure(task, repos_dir: Path, pairs: list[tuple[int, int]], kind: str, cache: Path, repeats: int) -> dict:
    sandbox = Sandbox(SandboxSettings(kind=kind, timeout_s=600), writable=[])
    totals: list[float] = []
    tests: list[float] = []
    build = 0.0
    for _ in range(repeats):
        for i, j in pairs:
            result = evaluate_patches(task, {i: task.features[i].patch, j: task.features[j].patch}, repos_dir,
                                      sandbox=sandbox, cache_dir=cache)
            built = float(result.env["built_s"])
            build += built
            totals.append(result.wall_s - built)
            tests.append(sum(t["wall_s"] for t in result.feature_tests.values()))
    return {"sandbox": kind, "pairs": len(totals), "total_median": statistics.median(totals),
            "total_mean": statistics.fmean(totals), "tests_median": statistics.median(tests),
            "other_median": statistics.median([t - u for t, u in zip(totals, tests)]), "env_build_s": build}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--repos-dir", type=Path)
    ap.add_argument("--task", help="POOL/ID (default: the synthetic pool)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--sandbox", nargs="+", default=["bwrap", "none"], choices=["bwrap", "none"])
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-cooper-"))
    if a.task:
        pool, tid = a.task.split("/")
        task, repos_dir = load_task(a.data_dir, pool, int(tid)), a.repos_dir
    else:
        synthetic = write_synthetic_pool(tmp / "pool")
        task, repos_dir = load_task(synthetic.data_dir, synthetic.pool, synthetic.task_id), synthetic.repos_dir
    pairs = list(itertools.combinations(sorted(task.features), 2))[: a.limit]
    cache = (a.cache_dir or tmp / "cache").resolve()
    start = time.monotonic()
    rows = [measure(task, repos_dir, pairs, kind, cache, a.repeats) for kind in a.sandbox]
    lines = [f"Task {task.name}, {len(pairs)} gold pairs x {a.repeats}; seconds per pair (test environment "
             f"build excluded: {sum(r['env_build_s'] for r in rows):.1f} s once); total {time.monotonic() - start:.0f} s.",
             "", "| sandbox | pairs | total median | total mean | both features' tests (median) | "
             "merge + set-up (median) |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['sandbox']} | {r['pairs']} | {r['total_median']:.2f} | {r['total_mean']:.2f} | "
              f"{r['tests_median']:.2f} | {r['other_median']:.2f} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    if not a.no_write:
        OUT.write_text("# CooperBench evaluation wall time per pair\n\n`benchmarks/bench_cooper_eval.py`\n\n"
                       + text + "\n")


if __name__ == "__main__":
    main()
