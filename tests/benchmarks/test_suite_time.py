"""benchmarks/suite_time.py reads pytest's --durations=0 lines: sums per file checked against
sums written out here, on random logs."""

from __future__ import annotations

import random
from collections import defaultdict

from benchmarks.suite_time import heavy, parse, report


def test_per_file_sums_and_the_wall_time_match_the_log() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        files = [f"tests/{rng.choice(['platform', 'actors/serving', 'families/silo'])}/test_{i}.py" for i in range(6)]
        want: dict[str, float] = defaultdict(float)
        lines = ["....", "============================= slowest durations =============================="]
        for _ in range(rng.randint(1, 40)):
            path, phase, seconds = rng.choice(files), rng.choice(["setup", "call", "teardown"]), rng.randint(1, 99999) / 100
            node = f"{path}::test_x[{rng.randint(0, 9)}]" if rng.random() < 0.9 else path
            lines.append(f"{seconds:.2f}s {phase:<8} {node}")
            want[path] += float(f"{seconds:.2f}")
        lines.append("(12 durations < 0.005s hidden.  Use -vv to show these durations.)")
        lines.append("=== 1 failed, 40 passed, 2 skipped in 123.45s (0:02:03) ===")
        per_file, wall, summary = parse("\n".join(lines))
        assert per_file.keys() == want.keys() and all(abs(per_file[p] - want[p]) < 1e-6 for p in want)
        assert wall == 123.45 and summary.startswith("1 failed, 40 passed")
        text = report(per_file, wall, summary)
        heavy_s = sum(s for p, s in want.items() if "actors/serving" in p)
        assert f"files with their own engine or cluster: {heavy_s:,.0f} s" in text


def test_what_counts_as_heavy() -> None:
    assert heavy("tests/actors/serving/test_spec.py") and heavy("tests/platform/sweeps/test_budget_engine.py")
    assert not heavy("tests/platform/sweeps/test_budget.py") and not heavy("tests/families/cooper/test_evaluate.py")
