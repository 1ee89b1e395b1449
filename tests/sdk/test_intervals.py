"""masgrid.sdk.intervals against the closed forms written out here (Wilson score; Newcombe's
hybrid score interval of a difference), on many random counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from masgrid.sdk.intervals import newcombe, wilson, wilson_rate
from tests.families.cooper.test_cooper_analysis import wilson_closed_form


def test_wilson_matches_the_closed_form_on_many_random_cases():
    rng = np.random.default_rng(1)
    for _ in range(2000):
        n = int(rng.integers(1, 800))
        k = int(rng.integers(0, n + 1))
        rate, low, high = wilson_rate(k, n)
        ref_low, ref_high = wilson_closed_form(k, n)
        assert rate == pytest.approx(k / n)
        assert low == pytest.approx(ref_low, abs=1e-9) and high == pytest.approx(ref_high, abs=1e-9)
        assert 0 <= low <= rate <= high <= 1
    assert all(math.isnan(v) for v in wilson_rate(0, 0))


def test_newcombe_difference_interval_matches_its_definition():
    rng = np.random.default_rng(2)
    for _ in range(500):
        n1, n2 = (int(v) for v in rng.integers(1, 300, size=2))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        p1, p2 = k1 / n1, k2 / n2
        (l1, u1), (l2, u2) = wilson_closed_form(k1, n1), wilson_closed_form(k2, n2)
        low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        high = p1 - p2 + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
        diff, got_low, got_high = newcombe(k1, n1, k2, n2)
        assert diff == pytest.approx(p1 - p2)
        assert got_low == pytest.approx(low, abs=1e-9) and got_high == pytest.approx(high, abs=1e-9)
    assert all(math.isnan(v) for v in newcombe(1, 2, 0, 0))


def test_the_bounds_and_the_rate_form_agree():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 500))
        k = int(rng.integers(0, n + 1))
        assert wilson_rate(k, n)[1:] == wilson(k, n)
    assert all(math.isnan(v) for v in wilson(0, 0))
