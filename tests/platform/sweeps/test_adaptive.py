"""Adaptive sweeps (`sweep.adaptive`, docs/adaptive.md): every stopping decision recomputed here
by a separate implementation of the rules (intervals from their closed forms, the SPRT as
thresholds on win counts), on many random streams and on the rows a real sweep recorded.

The scripted grid is AgentsNet colouring on 4-agent small-world graphs with a 2- or 4-round
budget: its randomized classical policy (and the graph, both drawn from the seed) fails on
some seeds and not others, so success is a Bernoulli outcome per seed.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from statistics import NormalDist

import pandas as pd
import pytest

import masgrid
from masgrid._private.platform.sweeps import sweep as sweep_module
from masgrid._private.analysis.cells import CELL_COLUMNS, read_cells
from masgrid._private.platform.sweeps.adaptive import build_cells, simulate
from masgrid._private.platform.run.config import ConfigError
from masgrid._private.platform.sweeps.stopping import AdaptiveSettings, interval

BASE = ("task=agentsnet/coloring", "graph=ws", "agents=4")


# ---------------------------------------------------------------- an independent implementation of the rules


def ref_wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def ref_interval(values: list[float], binary: bool, confidence: float) -> tuple[float, float]:
    if binary:
        return ref_wilson(int(sum(values)), len(values), confidence)
    from scipy import stats

    n = len(values)
    mean = sum(values) / n
    sem = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    if sem == 0:
        return mean, mean
    low, high = stats.t.interval(confidence, n - 1, loc=mean, scale=sem)
    return float(low), float(high)


def ref_schedule(s: dict) -> list[int]:
    n, out = min(s["min_seeds"], s["max_seeds"]), []
    while True:
        out.append(n)
        if n >= s["max_seeds"]:
            return out
        n = min(n + s["batch"], s["max_seeds"])


def ref_width(stream: list, s: dict, binary: bool) -> tuple[int, str]:
    for n in ref_schedule(s):
        seen = stream[:n]
        usable = [v for v in seen if v is not None]
        if len(seen) - len(usable) > s["max_failed"]:
            return n, "failed_runs"
        if len(usable) >= 2:
            low, high = ref_interval(usable, binary, s["confidence"])
            if high - low <= s["width"] + 1e-12:
                return n, "width_reached"
        if n >= s["max_seeds"]:
            return n, "max_seeds"
    raise AssertionError("unreachable")


def ref_sprt(a: list, b: list, s: dict) -> tuple[int, str]:
    """Wald's SPRT written as thresholds on the number of wins w among D discordant seeds."""
    q = s["odds_ratio"] / (1 + s["odds_ratio"])
    log_a = math.log(s["power"] * 2 / s["alpha"])
    log_b = math.log((1 - s["power"]) / (1 - s["alpha"] / 2))
    slope, offset = math.log(q / (1 - q)), math.log(2 * (1 - q))
    closed = {"a": False, "b": False}
    for n in ref_schedule(s):
        pa_, pb_ = a[:n], b[:n]
        if max(sum(v is None for v in pa_), sum(v is None for v in pb_)) > s["max_failed"]:
            return n, "failed_runs"
        both = [(x, y) for x, y in zip(pa_, pb_) if x is not None and y is not None]
        wins = {"a": sum(1 for x, y in both if x and not y), "b": sum(1 for x, y in both if y and not x)}
        discordant = wins["a"] + wins["b"]
        for side in ("a", "b"):
            if closed[side]:
                continue
            if wins[side] >= (log_a - discordant * offset) / slope:
                return n, "separated"
            if wins[side] <= (log_b - discordant * offset) / slope:
                closed[side] = True
        if all(closed.values()):
            return n, "not_separated"
        if n >= s["max_seeds"]:
            return n, "max_seeds"
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- the rules on random streams


def test_intervals_match_their_closed_forms():
    rng = random.Random(1)
    for _ in range(400):
        n = rng.randint(1, 80)
        k = rng.randint(0, n)
        conf = rng.uniform(0.5, 0.995)
        est, low, high = interval([1.0] * k + [0.0] * (n - k), True, conf)
        assert est == pytest.approx(k / n)
        assert (low, high) == pytest.approx(ref_wilson(k, n, conf), abs=1e-9)
        values = [rng.gauss(0, rng.uniform(0.01, 3)) for _ in range(rng.randint(2, 40))]
        est, low, high = interval(values, False, conf)
        assert est == pytest.approx(sum(values) / len(values))
        assert (low, high) == pytest.approx(ref_interval(values, False, conf), abs=1e-9)


def random_settings(rng: random.Random, **extra) -> dict:
    lo = rng.randint(2, 6)
    return {"min_seeds": lo, "batch": rng.randint(1, 6), "max_seeds": rng.randint(lo, 60),
            "max_failed": rng.randint(0, 4), "seed_start": rng.randint(0, 100), **extra}


@pytest.mark.parametrize("binary", [True, False])
def test_width_rule_matches_an_independent_implementation(binary):
    rng = random.Random(2 if binary else 3)
    for _ in range(300):
        s = random_settings(rng, confidence=rng.uniform(0.8, 0.99), width=rng.uniform(0.1, 0.6))
        p, fail = rng.random(), rng.choice([0.0, 0.0, 0.05, 0.3])
        stream = [None if rng.random() < fail else
                  (float(rng.random() < p) if binary else rng.betavariate(1 + 3 * p, 2)) for _ in range(60)]
        settings = AdaptiveSettings(metric="success" if binary else "sr", **s)
        assert simulate([stream], settings) == [ref_width(stream, s, binary)], s


def test_paired_sprt_matches_an_independent_implementation():
    rng = random.Random(4)
    reasons = set()
    for _ in range(400):
        s = random_settings(rng, alpha=rng.uniform(0.01, 0.2), power=rng.uniform(0.6, 0.95),
                            odds_ratio=rng.uniform(1.5, 6))
        pa_, pb_, fail = rng.random(), rng.random(), rng.choice([0.0, 0.0, 0.1])
        a = [None if rng.random() < fail else float(rng.random() < pa_) for _ in range(60)]
        b = [None if rng.random() < fail else float(rng.random() < pb_) for _ in range(60)]
        settings = AdaptiveSettings(compare="condition", **s)
        expected = ref_sprt(a, b, s)
        reasons.add(expected[1])
        assert simulate([a, b], settings) == [expected, expected], s
    assert reasons == {"separated", "not_separated", "max_seeds", "failed_runs"}


# ---------------------------------------------------------------- settings refused before Ray starts


@pytest.mark.parametrize("adaptive, message", [
    ({"width": 0.2, "metric": "sucess"}, "sweep.adaptive: metric: 'sucess' is not a numeric or yes/no runs column "
                                         "(docs/results.md); did you mean success"),
    ({"width": 0.2, "compare": "condition"}, "sweep.adaptive.compare: set width"),
    ({"compare": "condition", "metric": "sr"}, "a paired test (compare) needs a yes/no metric"),
    ({"width": 0.2, "min_seeds": 9, "max_seeds": 4}, "sweep.adaptive.max_seeds: 4 is less than min_seeds 9"),
    ({"max_seeds": 9}, "sweep.adaptive: max_seeds is set but the sweep is not adaptive"),
    ({"width": -1}, "sweep.adaptive.width: Input should be greater than 0"),
])
def test_invalid_settings_are_one_line_before_anything_runs(tmp_path, adaptive, message):
    with pytest.raises(ConfigError) as err:
        masgrid.sweep({"agents": [2, 3]}, f"results_dir={tmp_path}/r", adaptive=adaptive)
    assert message in str(err.value)
    assert len([line for line in str(err.value).splitlines() if "sweep." in line]) == 1
    assert not (tmp_path / "r").exists()


def test_compare_names_a_familys_top_level_key_either_way(tmp_path):
    cfgs = masgrid.grid([f"results_dir={tmp_path}", "task=sorting", "agents=2"], mode=["asc", "desc"])
    for axis in ("mode", "masbench.mode"):
        cells = build_cells(cfgs, AdaptiveSettings(compare=axis))
        assert len(cells) == 2 and {c.value for c in cells} == {"asc", "desc"} and cells[0].pair is cells[1]
        assert {c.label for c in cells} == {"mode=asc", "mode=desc"}  # labelled as users write the key


def test_grids_the_rules_cannot_take_are_refused(tmp_path):
    rd = f"results_dir={tmp_path}"
    cases = [
        (masgrid.grid([rd], agents=[2], seed=[0, 1]), {"width": 0.3}, "the grid sweeps seed"),
        (masgrid.grid([rd], condition=["base", "camoc", "abl_submit"]), {"compare": "condition"},
         "exactly two values, it has 3"),
        (masgrid.grid([rd], agents=[2, 3]), {"compare": "nosuchkey"}, "nosuchkey is not a configuration key"),
        (masgrid.grid([rd], agents=[2], condition=["base", "camoc"]) + masgrid.grid([rd], agents=[3], condition=["base"]),
         {"compare": "condition"}, "has no partner with condition=camoc"),
    ]
    for cfgs, adaptive, message in cases:
        with pytest.raises(ConfigError, match=message):
            build_cells(cfgs, AdaptiveSettings(**adaptive))
        with pytest.raises(ConfigError, match=message):
            masgrid.sweep(cfgs, adaptive=adaptive)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args, line", [
    (["-m", "agents=2", "seed=0,1", "sweep.adaptive.width=0.3"],
     "masgrid run: sweep.adaptive: the grid sweeps seed, but an adaptive sweep chooses the seeds itself "
     "(sweep.adaptive.seed_start, +1, ...); drop seed from the grid"),
    (["agents=2", "sweep.adaptive.width=0.3"],
     "masgrid run: sweep.adaptive applies to sweeps; add -m (a grid of one cell is fine)"),
])
def test_cli_refuses_bad_settings_with_one_line_and_no_results_dir(tmp_path, args, line):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", *args,
                          f"results_dir={tmp_path}/r"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [line]
    assert not (tmp_path / "r").exists()


def test_sweep_settings_leave_run_ids_unchanged():
    cfg, settings = masgrid.compose()
    assert not settings.adaptive.active
    assert cfg.run_id == "563041a2dabd1565"  # a default config's run id before sweep.adaptive existed
    cfg, _ = masgrid.compose(*BASE, "agentsnet.rounds=2", "seed=3", "sweep.adaptive.width=0.2")
    assert cfg.run_id == "7d0f45b8330e79c8"


def test_cells_columns_are_documented():
    doc = (Path(__file__).parents[3] / "docs" / "results.md").read_text()
    section = doc[doc.index("## cells"):]
    for name, (kind, meaning) in CELL_COLUMNS.items():
        assert f"| `{name}` | {kind} | {meaning} |" in section, name


# ---------------------------------------------------------------- real sweeps


def recorded(results_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(results_dir / "runs")


def check_cells_against_runs(results_dir: Path, settings: AdaptiveSettings, rounds: list[int]) -> pd.DataFrame:
    """Every cells row recomputed from the runs rows: seeds in order, the run ids of those seeds'
    configs, the decision of the independent rule, the estimate and interval."""
    cells = read_cells(results_dir).sort_values("cell").reset_index(drop=True)
    runs = recorded(results_dir).set_index("run_id")
    assert runs.index.is_unique
    assert sorted(runs.index) == sorted(r for ids in cells["run_ids"] for r in ids)  # no run outside the cells
    s = settings.model_dump()
    streams = {}
    for row in cells.itertuples():
        (value,) = [r for r in rounds if row.cell == f"agentsnet.rounds={r}"]
        seeds = range(settings.seed_start, settings.seed_start + row.n_seeds)
        expected_ids = [c.run_id for c in masgrid.grid([*BASE, f"agentsnet.rounds={value}",
                                                        f"results_dir={results_dir}"], seed=seeds)]
        assert list(row.run_ids) == expected_ids
        assert list(runs.loc[expected_ids, "seed"]) == list(seeds)
        streams[value] = [float(v) if st in ("ok", "degraded") else None
                          for v, st in zip(runs.loc[expected_ids, "success"], runs.loc[expected_ids, "status"])]
        usable = [v for v in streams[value] if v is not None]
        assert row.n_runs == len(usable) and row.n_failed == row.n_seeds - len(usable)
        assert row.estimate == pytest.approx(sum(usable) / len(usable))
        assert (row.ci_low, row.ci_high) == pytest.approx(ref_wilson(int(sum(usable)), len(usable), s["confidence"]))
        assert row.rule == settings.rule()
    if settings.compare is None:
        for row in cells.itertuples():
            stream = streams[int(row.cell.split("=")[1])]
            n, reason = ref_width(stream + [0.0] * (s["max_seeds"] - len(stream)), s, True)
            assert (row.n_seeds, row.reason) == (n, reason)
    else:
        a, b = streams[rounds[0]], streams[rounds[1]]
        pad = [0.0] * (s["max_seeds"] - len(a))  # seeds never run cannot matter: the rule stopped before them
        expected = ref_sprt(a + pad, b + pad, s)
        assert {(row.n_seeds, row.reason) for row in cells.itertuples()} == {expected}
    return cells


@pytest.mark.slow
def test_scripted_width_sweep_records_why_each_cell_stopped(tmp_path, ray_session):
    adaptive = {"width": 0.5, "min_seeds": 4, "batch": 4, "max_seeds": 12}
    result = masgrid.sweep({"agentsnet__rounds": [2, 4]}, *BASE, f"results_dir={tmp_path}", adaptive=adaptive)
    assert result.failed == 0 and result.ran == sum(c["n_seeds"] for c in result.cells)
    cells = check_cells_against_runs(tmp_path, AdaptiveSettings(**adaptive), [2, 4])
    assert set(cells["reason"]) <= {"width_reached", "max_seeds"}
    assert [c["reason"] for c in sorted(result.cells, key=lambda c: c["cell"])] == list(cells["reason"])
    # a fixed sweep over the same seeds shares the runs: nothing runs again
    n = int(cells["n_seeds"].min())
    again = masgrid.sweep({"agentsnet__rounds": [2, 4], "seed": range(n)}, *BASE, f"results_dir={tmp_path}")
    assert again.ran == 0 and again.skipped_ok == 2 * n
    # the report states the rule under its tables and lists every cell
    index = masgrid.report(tmp_path, site=False)
    note = next(line for line in index.read_text().splitlines() if line.startswith("Stopping rule:"))
    assert "approximate" in note and AdaptiveSettings(**adaptive).rule() in note
    for md in index.parent.rglob("*.md"):
        lines = md.read_text().splitlines()
        ends = [i for i, line in enumerate(lines) if line.startswith("|")
                and (i + 1 == len(lines) or not lines[i + 1].startswith("|"))]
        for i in ends:
            assert lines[i + 2] == note, md
    table = (index.parent / "adaptive.md").read_text()
    for row in cells.itertuples():
        assert f"| {row.cell} | success | {row.n_seeds} | {row.n_runs} | 0 | {row.estimate:.2f} |" in table


@pytest.mark.slow
def test_interrupted_compare_sweep_resumes_without_running_anything_twice(tmp_path, ray_session, monkeypatch):
    adaptive = {"compare": "agentsnet.rounds", "min_seeds": 4, "batch": 4, "max_seeds": 16, "odds_ratio": 4.0}
    grid = {"agentsnet__rounds": [2, 4]}
    real, calls = sweep_module._run_pending, []

    def cut_after_two_looks(todo, *args):
        calls.append(len(todo))
        real(todo, *args)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as Ctrl-C after the second look's runs were recorded

    monkeypatch.setattr(sweep_module, "_run_pending", cut_after_two_looks)
    with pytest.raises(KeyboardInterrupt):
        masgrid.sweep(grid, *BASE, f"results_dir={tmp_path}", adaptive=adaptive)
    first = recorded(tmp_path).set_index("run_id")["started_at"]
    assert len(first) == sum(calls) == 16
    interrupted = read_cells(tmp_path)
    assert set(interrupted["reason"]) == {"in_progress"} and set(interrupted["n_seeds"]) == {4}  # the first look's
    monkeypatch.setattr(sweep_module, "_run_pending", real)
    result = masgrid.sweep(grid, *BASE, f"results_dir={tmp_path}", adaptive=adaptive)
    runs = recorded(tmp_path).set_index("run_id")
    assert runs.index.is_unique
    assert result.skipped_ok == 16 and result.ran == len(runs) - 16
    assert (runs.loc[first.index, "started_at"] == first).all()  # the recorded runs were not run again
    cells = check_cells_against_runs(tmp_path, AdaptiveSettings(**adaptive), [2, 4])
    assert len(masgrid.load_results(tmp_path).cells) == 2  # the resumed sweep rewrote the same file
    assert set(cells["wins"] + cells["losses"]) == {int(cells["wins"].sum())}
    assert set(cells["compare_value"]) == {"2", "4"}
