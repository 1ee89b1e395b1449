"""The report's sentence on model.cache: how many of the model calls of the runs shown were
answered from the response cache, and how many tokens that left unpaid.

A replayed run records the tokens of the calls it replayed (the run's numbers are the same
as its first execution's), so a reader needs this line to tell what the runs cost from what
they measure (docs/hosted-apis.md).
"""

from __future__ import annotations

import pandas as pd

COUNTS = ("calls_from_cache", "tokens_in_from_cache", "tokens_out_from_cache")


def cache_sentence(runs: pd.DataFrame) -> str | None:
    """One line when any run shown took calls from the cache; None otherwise (no line)."""
    if runs.empty or "calls_from_cache" not in runs.columns:
        return None
    known = runs[runs["calls_from_cache"].notna()]
    hits = int(known["calls_from_cache"].sum())
    if not hits:
        return None
    calls = int(known["model_calls"].sum())
    tokens = int(known["tokens_in_from_cache"].sum() + known["tokens_out_from_cache"].sum())
    total = int(known["tokens_in"].sum() + known["tokens_out"].sum())
    with_hits = int((known["calls_from_cache"] > 0).sum())
    share = f" ({tokens / total:.1%} of {total})" if total else ""
    line = (f"Response cache: {hits} of {calls} model calls ({hits / calls:.1%}) were answered from the cache "
            f"(model.cache), in {with_hits} of {len(known)} runs; their {tokens} tokens{share} are counted in the "
            f"tables but were not paid again.")
    unknown = len(runs) - len(known)
    if unknown:
        line += f" {unknown} more runs were recorded before masgrid counted cache hits."
    return line
