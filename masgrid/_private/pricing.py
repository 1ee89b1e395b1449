"""The price of tokens: one formula for every figure in US dollars (the report's cost columns,
sweep budgets), so the two can never disagree about what a run cost."""

from __future__ import annotations

from typing import Any


def usd_cost(tokens_in: Any, tokens_out: Any, input_usd_per_mtok: Any, output_usd_per_mtok: Any) -> Any:
    """US dollars for these prompt and completion tokens at a list price per million tokens;
    floats, or pandas Series priced row by row (the report prices a column of runs at once)."""
    return tokens_in * (input_usd_per_mtok / 1e6) + tokens_out * (output_usd_per_mtok / 1e6)
