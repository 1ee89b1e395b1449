"""`to_table` (platform/results/sanitize.py) against values computed here, on many random event chunks.

The expected table is written without Arrow: each row's value of each events column, or
null when the key is missing, with any lone surrogate escaped as `\\udc80`; keys outside the
schema are dropped. Both the fast path (the whole chunk in one conversion) and the row-wise
path (a chunk holding a lone surrogate) must give exactly that.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, UTC
from typing import Any

import pyarrow as pa
import pytest

from masgrid._private.platform.results.recorder import SCHEMAS
from masgrid._private.platform.results.sanitize import to_table

SCHEMA = SCHEMAS["events"]
ALPHABET = "abc xyz 0123456789 \n\t{}[]\"'\\ é ü 漢字 🙂 \x00"


def random_text(rng: random.Random, surrogates: bool) -> str:
    chars = [rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40))]
    if surrogates and chars and rng.random() < 0.3:
        chars.insert(rng.randrange(len(chars)), rng.choice(["\udc80", "\ud800", "\udfff"]))
    return "".join(chars)


def random_value(rng: random.Random, field: pa.Field, surrogates: bool) -> Any:
    t = field.type
    if rng.random() < 0.15:
        return None
    if pa.types.is_string(t):
        return random_text(rng, surrogates)
    if pa.types.is_int64(t):
        return rng.randrange(-10**12, 10**12)
    if pa.types.is_float64(t):
        return rng.uniform(-1e6, 1e6)
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_timestamp(t):
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=rng.randrange(10**14))
    if pa.types.is_list(t) and pa.types.is_int64(t.value_type):
        return [rng.randrange(1000) for _ in range(rng.randrange(4))]
    if pa.types.is_list(t) and pa.types.is_string(t.value_type):
        return [random_text(rng, surrogates) for _ in range(rng.randrange(3))]
    raise AssertionError(f"no generator for {t}")


def escaped(value: Any) -> Any:
    if isinstance(value, str):
        return "".join(c if not 0xD800 <= ord(c) <= 0xDFFF else f"\\u{ord(c):04x}" for c in value)
    if isinstance(value, list):
        return [escaped(v) for v in value]
    return value


@pytest.mark.parametrize("surrogates", [False, True])
def test_random_chunks_match_values_computed_without_arrow(surrogates):
    rng = random.Random(11 + surrogates)
    for _ in range(40):
        rows = []
        for _ in range(rng.randrange(0, 120)):
            row = {f.name: random_value(rng, f, surrogates) for f in SCHEMA if rng.random() < 0.8}
            if rng.random() < 0.2:
                row["not_a_column"] = object()  # ignored: the schema decides the columns
            rows.append(row)
        expected = [{f.name: escaped(row.get(f.name)) for f in SCHEMA} for row in rows]
        table = to_table(rows, SCHEMA)
        assert table.schema.equals(SCHEMA)
        assert table.to_pylist() == expected


def test_a_value_of_the_wrong_type_costs_that_value_only():
    rows = [{"seq": 1, "text": "kept", "tokens_in": "many"}, {"seq": 2, "text": "also kept", "tokens_in": 5}]
    out = to_table(rows, SCHEMA).to_pylist()
    assert [r["text"] for r in out] == ["kept", "also kept"]
    assert out[0]["tokens_in"] is None and "tokens_in" in out[0]["error"]
    assert out[1]["tokens_in"] == 5 and out[1]["error"] is None
