"""Rows as Parquet can store them, whatever a model wrote: one bad value never costs a row,
and one bad row never costs the others of its file.

Model text can hold lone surrogates (invalid in UTF-8, so Arrow refuses the whole batch);
those are written escaped (envs/text.py). A value
that still does not fit its column (e.g. an integer beyond int64) is stored as null and
named in the row's `error` column, so the loss is visible.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from masgrid._private.envs.text import clean_text

_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def to_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """The rows as a table of `schema` (missing keys null), bad values nulled and noted.

    The rows go to Arrow in one conversion, as a struct array of the schema's fields (Arrow
    reads the dicts in C++; keys outside the schema are ignored, missing ones are null):
    several times faster than copying every row into a cleaned dict first
    (benchmarks/bench_recorder.py). Valid UTF-8 text is stored as it is either way
    (clean_text returns it unchanged), so only a chunk holding a value Arrow refuses takes
    the row-wise path below, which escapes and nulls value by value."""
    try:
        batch = pa.RecordBatch.from_struct_array(pa.array(rows, type=pa.struct(list(schema))))
        return pa.Table.from_batches([batch], schema=schema)
    except _ERRORS:
        return _to_table_rowwise(rows, schema)


def _to_table_rowwise(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    cleaned = [{name: _clean(row.get(name)) for name in schema.names} for row in rows]
    try:
        return pa.Table.from_pylist(cleaned, schema=schema)
    except _ERRORS:
        return pa.Table.from_pylist([_fit(row, schema) for row in cleaned], schema=schema)


def _fit(row: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    lost = []
    out = dict(row)
    for field in schema:
        try:
            pa.array([out[field.name]], type=field.type)
        except _ERRORS as exc:
            lost.append(f"{field.name} ({type(exc).__name__})")
            out[field.name] = None
    if lost and "error" in schema.names:
        note = "unrecordable value(s) stored as null: " + ", ".join(lost)
        out["error"] = f"{out['error']}; {note}" if out.get("error") else note
    return out
