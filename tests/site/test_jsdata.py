"""Data scripts carry any text intact: a page reads back exactly what was written, and no
model output can close the <script> element or break the JavaScript string."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pandas as pd
import pytest

from masgrid._private.site.jsdata import plain, read_data, write_data

ALPHABET = ["a", "\n", "\"", "'", "\\", "</script>", "<!--", "\u2028", "\u2029", "é", "😀", "\x00", "${x}", "`"]


def test_random_texts_round_trip(tmp_path):
    rng = random.Random(0)
    for i in range(200):
        value = {"text": "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))),
                 "n": rng.randint(-5, 5), "list": [rng.random() for _ in range(3)]}
        path = write_data(tmp_path / f"{i}.js", f"k:{i}", value)
        body = path.read_text(encoding="utf-8")
        assert "</script" not in body.lower() and "\u2028" not in body
        assert read_data(path) == (f"k:{i}", value)


def test_missing_values_become_null_not_nan():
    value = plain({"a": float("nan"), "b": pd.NA, "c": np.int64(3), "d": np.array([1.5, np.nan]),
                   "e": pd.Timestamp("2026-01-01", tz="UTC"), "f": math.inf})
    assert value == {"a": None, "b": None, "c": 3, "d": [1.5, None], "e": "2026-01-01T00:00:00+00:00", "f": None}
    json.dumps(value, allow_nan=False)


def test_a_file_that_is_not_a_data_script_is_refused(tmp_path):
    (tmp_path / "x.js").write_text("alert(1)")
    with pytest.raises(ValueError, match="not a masgridData"):
        read_data(tmp_path / "x.js")
