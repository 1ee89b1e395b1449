"""Data files the site's pages load with <script> tags, so they work from file:// as well.

A browser refuses fetch() of local files, but runs a local script: each data file is one
call `masgridData("<key>", <json>)` that hands the value to whichever page asked for it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def plain(value: Any) -> Any:
    """A JSON-safe copy: NaN/NA/NaT -> None, numpy scalars and arrays -> Python, timestamps -> ISO."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, (pd.Timestamp,)):
        return None if pd.isna(value) else value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    return value


def write_data(path: Path, key: str, value: Any) -> Path:
    """Write `value` as a data script for `key`. `</` is escaped so no text closes the tag."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(plain(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    path.write_text(f"masgridData({json.dumps(key)},{text});\n", encoding="utf-8")
    return path


def read_data(path: Path) -> tuple[str, Any]:
    """The key and value of a data script (tests and tools read what the pages read)."""
    text = path.read_text(encoding="utf-8").strip()
    if not (text.startswith("masgridData(") and text.endswith(");")):
        raise ValueError(f"{path}: not a masgridData(...) script")
    body = text[len("masgridData("):-2]
    key, _, value = body.partition(",")
    return json.loads(key), json.loads(value)
