"""Parsing of submit_result arguments into integer lists (typed, agent-visible errors)."""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[\s,]+")
_INT = re.compile(r"^[+-]?\d+$")


def parse_int_list(raw: str, length: int) -> list[int]:
    """Accept `[1, 2, 3]`, `1, 2, 3` or `1 2 3`; reject non-integers and wrong lengths."""
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    elif "[" in text or "]" in text:
        raise ValueError(f"malformed list {raw.strip()[:80]!r}; write e.g. [1, 2, 3]")
    tokens = [t for t in _SEPARATORS.split(text) if t]
    bad = [t for t in tokens if not _INT.match(t)]
    if bad:
        raise ValueError(f"expected integers only, got {bad[0][:40]!r}")
    if len(tokens) != length:
        raise ValueError(f"expected exactly {length} integers, got {len(tokens)}")
    return [int(t) for t in tokens]
