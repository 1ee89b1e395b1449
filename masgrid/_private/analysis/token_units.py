"""Whether a table's token figures are in model units: communication tokens (and so CR) of a
run counted with the approximate counter are estimates, and the report says how many runs
that concerns (docs/models.md, "Tokens in model units")."""

from __future__ import annotations

import pandas as pd

APPROX = "approx"


def approximate_token_note(runs: pd.DataFrame) -> str:
    """One sentence naming the runs whose communication tokens were estimated ('' if none)."""
    if runs.empty or "token_counter" not in runs.columns:
        return ""
    approx = runs["token_counter"].fillna(APPROX) == APPROX
    model = runs["backend"] != "scripted" if "backend" in runs.columns else pd.Series(True, index=runs.index)
    if not approx.any():
        return ""
    parts = [f"{int(approx.sum())} of {len(runs)} runs counted communication tokens with the approximate "
             "counter (token_counter=approx), so their tokens_comm and CR are estimates"]
    if (approx & model).any():
        parts.append(f"{int((approx & model).sum())} of them called a model whose tokenizer was not used")
    return "; ".join(parts) + "."
