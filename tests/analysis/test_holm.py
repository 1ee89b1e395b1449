"""Holm's step-down adjustment against its textbook definition, written out separately, on
many random sets of p-values (with undefined tests), and its place in the Welch tables."""

from __future__ import annotations

import itertools
import math
import random

import pandas as pd
import pytest

from masgrid._private.analysis.stats import holm, welch_tests


def _textbook(p: list[float]) -> list[float]:
    """adj(p_(i)) = max over j <= i of min(1, (m - j + 1) p_(j)), sorted ascending, 1-based."""
    defined = sorted((v, i) for i, v in enumerate(p) if not math.isnan(v))
    m = len(defined)
    out = [math.nan] * len(p)
    for rank, (_, i) in enumerate(defined, start=1):
        out[i] = max(min(1.0, (m - j + 1) * defined[j - 1][0]) for j in range(1, rank + 1))
    return out


def test_holm_matches_the_textbook_definition_on_random_inputs():
    rng = random.Random(1)
    for _ in range(500):
        p = [rng.choice([math.nan, rng.random(), rng.random() ** 4, 1.0]) for _ in range(rng.randint(0, 12))]
        got = list(holm(p))
        want = _textbook(p)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w)
        for g, raw in zip(got, p):
            assert math.isnan(raw) or g >= raw  # never smaller than the uncorrected p


def test_welch_tables_keep_the_uncorrected_p_next_to_holm():
    rng = random.Random(2)
    rows = [{"run_id": f"{c}{i}", "status": "ok", "condition": c, "model": "m", "protocol": p,
             "sr": rng.random() + (0.3 if c == "camoc" else 0)}
            for c, p, i in itertools.product(("base", "camoc", "abl_submit"), ("kv", "p2p"), range(6))]
    out = welch_tests(pd.DataFrame(rows), "sr", "condition", ("model", "protocol"), "base")
    assert len(out) == 4 and {"p", "p_holm", "sd_a", "sd_b"} <= set(out.columns)
    assert list(out["p_holm"]) == pytest.approx(_textbook(list(out["p"])))
