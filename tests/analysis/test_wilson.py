"""The one Wilson interval the core report sections (channel, topology, teams) and the
adaptive stopping rule share, against the score formula written out here and scipy."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import binomtest, norm

from masgrid._private.analysis.dispersion import wilson


def score_interval(k: int, n: int, confidence: float) -> tuple[float, float]:
    z = norm.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_every_small_case_and_random_large_ones() -> None:
    cases = [(k, n, c) for n in range(1, 41) for k in range(n + 1) for c in (0.9, 0.95, 0.99)]
    rng = random.Random(11)
    cases += [(rng.randint(0, n), n, rng.choice((0.8, 0.95, 0.999))) for n in (rng.randint(41, 5000) for _ in range(300))]
    for k, n, confidence in cases:
        low, high = wilson(k, n, confidence)
        assert (low, high) == pytest.approx(score_interval(k, n, confidence), abs=1e-12), (k, n, confidence)
        ci = binomtest(k, n).proportion_ci(confidence, method="wilson")
        assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-9)
        assert 0.0 <= low <= k / n <= high <= 1.0


def test_no_runs_is_no_interval() -> None:
    assert all(math.isnan(v) for v in wilson(0, 0))
