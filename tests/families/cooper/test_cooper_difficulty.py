"""Appendix D/E (families/cooper/difficulty.py) against a separate computation in exact
fractions: d(t), its rescaling, the 10 buckets, the per-bucket counts, the trapezoidal AUC,
Delta AUC and retention (Algorithm 1), on many random frames."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from masgrid.families.cooper import difficulty as cd
from tests.families.cooper.cooper_frames import random_runs, scored


def reference(runs: pd.DataFrame) -> tuple[dict[str, int], dict[tuple[str, str, int], list[int]]]:
    """Bucket per task and [n, k] per (model, setting, bucket) including `pooled`, by hand."""
    ok = scored(runs)
    ok = ok[ok["cooper_features"].str.count(",") == 1]
    key = lambda r: f"{r.cooper_pool}/{r.cooper_task_id}/{r.cooper_features}"  # noqa: E731
    solo: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in ok.itertuples():
        if r.cooper_setting == "solo":
            solo[key(r)][r.model].append(bool(r.success))
    d = {t: 1 - sum(Fraction(sum(v), len(v)) for v in per.values()) / len(per) for t, per in solo.items()}
    low, high = min(d.values()), max(d.values())
    bucket = {t: min(int(((v - low) / (high - low)) * 10), 9) if high > low else 0 for t, v in d.items()}
    counts: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    for r in ok.itertuples():
        if key(r) in bucket:
            for model in (r.model, "pooled"):
                cell = counts[(model, r.cooper_setting, bucket[key(r)])]
                cell[0] += 1
                cell[1] += bool(r.success)
    return bucket, counts


def trapezoid(points: list[tuple[float, float]]) -> float:
    return sum((x2 - x1) * (y1 + y2) / 2 for (x1, y1), (x2, y2) in zip(points, points[1:]))


@pytest.mark.parametrize("seed", range(16))
def test_difficulty_buckets_curves_and_auc_match_a_separate_computation(seed):
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, models=int(rng.integers(1, 6)), tasks=int(rng.integers(4, 20)),
                       repeats=int(rng.integers(1, 4)), sizes=(2, 3))
    bucket, counts = reference(runs)
    table = cd.difficulty(runs)
    assert dict(zip(table["task_key"], table["bucket"])) == bucket
    curves = cd.curves(runs, table)
    for row in curves.itertuples():
        n, k = counts.get((row.model, row.setting, row.bucket), [0, 0])
        assert (row.n, row.k) == (n, k), row
        assert row.midpoint == pytest.approx((row.bucket + 0.5) / 10)
        assert (math.isnan(row.rate) and n == 0) or row.rate == pytest.approx(k / n)
    table4 = cd.retention(curves)
    for row in table4.itertuples():
        common = [b for b in range(10) if counts.get((row.model, "solo", b), [0])[0]
                  and counts.get((row.model, row.setting, b), [0])[0]]
        assert row.buckets_used == ",".join(map(str, common))
        if len(common) < 2:
            assert math.isnan(row.auc_solo) and "no AUC" in row.flag
            continue
        auc = {s: trapezoid([((b + 0.5) / 10, counts[(row.model, s, b)][1] / counts[(row.model, s, b)][0])
                             for b in common]) for s in ("solo", row.setting)}
        assert row.auc_solo == pytest.approx(auc["solo"]) and row.auc_setting == pytest.approx(auc[row.setting])
        assert row.delta_auc == pytest.approx(auc["solo"] - auc[row.setting])
        if auc["solo"] > 0:
            assert row.retention == pytest.approx(auc[row.setting] / auc["solo"])
        else:
            assert math.isnan(row.retention) and "retention undefined" in row.flag
        assert (len(common) < 10) == ("buckets" in row.flag)
    assert table4["model"].iloc[-1] == "pooled"


def test_rescaled_edges_land_in_the_upper_bucket_and_one_in_the_last():
    scaled = np.array([0.0, 0.1, 0.3, 0.7, 0.9, 0.99, 1.0, 3 / 10, 1 - 0.7, 0.1 * 3])
    assert cd.bucket_of(scaled).tolist() == [0, 1, 3, 7, 9, 9, 9, 3, 3, 3]


def _pair_runs(outcomes: dict[tuple[str, int, str], bool]) -> pd.DataFrame:
    return pd.DataFrame([{"run_id": f"{m}-{t}-{s}", "task": f"cooper/p_task/{t}", "model": m, "status": "ok",
                          "cooper_pool": "p_task", "cooper_task_id": t, "cooper_features": "1,2",
                          "cooper_setting": s, "success": ok} for (m, t, s), ok in outcomes.items()])


def test_missing_models_and_degenerate_difficulty_are_flagged():
    # task 1: both models ran Solo; task 2: only model a -> flagged; task 3: no Solo -> left out
    runs = _pair_runs({("a", 1, "solo"): True, ("b", 1, "solo"): False, ("a", 2, "solo"): False,
                       ("a", 1, "coop"): True, ("a", 3, "coop"): True})
    table = cd.difficulty(runs).set_index("cooper_task_id")
    assert table.loc[1, "d"] == 0.5 and table.loc[2, "d"] == 1.0 and 3 not in table.index
    assert table.loc[2, "flag"] == "no Solo runs of b" and table.loc[1, "flag"] == ""
    note = cd.difficulty_note(runs, cd.difficulty(runs))
    assert "2 of 3 two-feature tasks" in note and "1 tasks (1 runs) have no Solo run" in note
    same = _pair_runs({("a", 1, "solo"): True, ("a", 2, "solo"): True, ("a", 1, "coop"): False})
    flat = cd.difficulty(same)
    assert (flat["bucket"] == 0).all() and flat["flag"].str.contains("rescaling undefined").all()
    table4 = cd.retention(cd.curves(same, flat))
    assert table4["flag"].str.contains("no AUC").all() and table4["auc_solo"].isna().all()


def test_a_model_without_coop_runs_gets_a_flagged_row():
    runs = _pair_runs({("a", 1, "solo"): True, ("a", 2, "solo"): False, ("b", 1, "solo"): True,
                       ("b", 2, "solo"): True, ("a", 1, "coop"): True, ("a", 2, "coop"): False})
    table4 = cd.retention(cd.curves(runs)).set_index(["model", "setting"])
    assert "no coop runs" in table4.loc[("b", "coop"), "flag"] and math.isnan(table4.loc[("b", "coop"), "auc_solo"])
    assert table4.loc[("a", "coop"), "retention"] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(6))
def test_gap_by_difficulty_is_solo_minus_coop_per_bucket(seed):
    rng = np.random.default_rng(300 + seed)
    runs = random_runs(rng, models=int(rng.integers(1, 4)), tasks=int(rng.integers(4, 20)))
    _, counts = reference(runs)
    table = cd.gap_by_difficulty(cd.curves(runs))
    assert len(table) == 10 * table["model"].nunique()
    for row in table.itertuples():
        ns, ks = counts.get((row.model, "solo", row.bucket), [0, 0])
        nc, kc = counts.get((row.model, "coop", row.bucket), [0, 0])
        assert (row.n_solo, row.n_setting) == (ns, nc)
        if ns and nc:
            assert row.gap == pytest.approx(ks / ns - kc / nc) and row.ci_low <= row.gap <= row.ci_high
        else:
            assert math.isnan(row.gap) and row.flag.startswith("empty bucket")
