"""Lenient, agent-readable parsers for SILO answers (JSON first, a few plain-text forms)."""

from __future__ import annotations

import json
import math
from typing import Any

_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


def _load(raw: str) -> Any:
    text = raw.strip().rstrip(".")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _unwrap(value: Any) -> Any:
    """[42] -> 42 and {"answer": 42} -> 42: common wrappings of a single value."""
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value.values()))
    return value


def parse_int(raw: str) -> int:
    value = _unwrap(_load(raw))
    if isinstance(value, bool):
        raise ValueError("expected an integer, not a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip().replace(",", ""))
        except ValueError:
            pass
    raise ValueError(f"expected a single integer, e.g. 42; got {raw.strip()[:60]!r}")


def parse_number(raw: str) -> float:
    value = _unwrap(_load(raw))
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"expected a decimal number, e.g. 12.34; got {raw.strip()[:60]!r}") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"expected a finite decimal number, e.g. 12.34; got {raw.strip()[:60]!r}")
    return float(value)


def parse_bool(raw: str) -> bool:
    value = _unwrap(_load(raw))
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"expected true or false; got {raw.strip()[:60]!r}")


def parse_label(raw: str, allowed: list[str]) -> str:
    value = _unwrap(_load(raw))
    text = str(value).strip().strip("'\"")
    if text not in allowed:
        raise ValueError(f"expected one of {allowed}; got {raw.strip()[:60]!r}")
    return text


def parse_int_list(raw: str, length: int) -> list[int]:
    value = _load(raw)
    if isinstance(value, str):
        try:
            value = [int(part) for part in value.replace(",", " ").split()]
        except ValueError:
            raise ValueError(f"expected a JSON list of {length} integers, e.g. [9, 7, 5]") from None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"expected a JSON list of {length} integers, e.g. [9, 7, 5]")
    if len(value) != length:
        raise ValueError(f"expected exactly {length} integers, got {len(value)}")
    return value
