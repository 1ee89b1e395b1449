"""MAS-Bench Table 4 (appendix C): tokens, communication share and cost per model.

What the paper reports, and how masgrid fills each column:
- `runs` (#Logs): usable runs (analysis/usable_runs.py) of every task and condition in the
  results, as the paper aggregates "over all available logs";
- `total_mtok`, `comm_mtok`: sums of `tokens_total` and `tokens_comm` in millions, whole
  runs (both phases of abl_message/camoc: what was spent, unlike the phase-2 accounting
  of the other tables);
  `comm_pct` = 100 * comm / total; `tokens_per_run` (Tok/log) = total / runs, followed by its
  sample SD over the runs (`tokens_per_run sd`, ddof = 1; NaN where a count is missing);
- cost: the paper's counters did not split input from output, so it gives a midpoint
  (half the tokens at each price, `cost_mid_usd`) inside a range [all at the input price,
  all at the output price] (`cost_low_usd`, `cost_high_usd`). masgrid records the split,
  so `cost_usd` is the cost of the recorded prompt and completion tokens; the three
  paper-style columns are there to compare with the paper.

Prices are never guessed: they come from the `price` field of the run's model preset
(`model.price` in conf/model/*.yaml, recorded in the run's `config_json`). A group with
any run lacking a price gets no cost (NaN) and its `note` says how many runs lacked one.
Token counts that were estimated locally (the server sent no usage) are counted in
`usage_estimated_calls`, so an estimated total is visible as such. The Total row sums the
groups; like the paper's it has no tokens per run (a mean over models mixes models).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from masgrid.sdk.models import usd_cost
from masgrid.sdk.results import usable

PRICE_FIELDS = ("input_usd_per_mtok", "output_usd_per_mtok")
COLUMNS = ["runs", "total_mtok", "comm_mtok", "comm_pct", "tokens_per_run", "tokens_per_run sd", "cost_usd", "cost_mid_usd",
           "cost_low_usd", "cost_high_usd", "usage_estimated_calls", "note"]


def run_prices(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run: the model preset's input and output price per million tokens (NaN when the
    preset has no `price`, or the run's `config_json` is missing or unreadable)."""
    def one(config_json: object) -> tuple[float, float]:
        try:
            price = json.loads(str(config_json)).get("model", {}).get("price") or {}
            return tuple(float(price[f]) for f in PRICE_FIELDS)  # type: ignore[return-value]
        except (ValueError, TypeError, KeyError, AttributeError):
            return (np.nan, np.nan)

    source = runs["config_json"] if "config_json" in runs.columns else pd.Series(None, index=runs.index)
    values = [one(v) for v in source]
    return pd.DataFrame(values, index=runs.index, columns=list(PRICE_FIELDS), dtype=float)


def _costs(ok: pd.DataFrame) -> pd.DataFrame:
    """Per-run token counts and costs under the recorded split and the paper's three assumptions."""
    prices = run_prices(ok)
    pin, pout = prices["input_usd_per_mtok"], prices["output_usd_per_mtok"]
    total = ok["tokens_total"].astype(float)
    estimated = ok["calls_usage_estimated"] if "calls_usage_estimated" in ok.columns else 0
    return pd.DataFrame({
        "tokens_total": total, "tokens_comm": ok["tokens_comm"].astype(float),
        "cost_usd": usd_cost(ok["tokens_in"].astype(float), ok["tokens_out"].astype(float), pin, pout),
        # the paper's assumptions: half of the total at each price, all of it at one
        "cost_mid_usd": usd_cost(total / 2, total / 2, pin, pout),
        "cost_low_usd": usd_cost(total, 0, pin, pout), "cost_high_usd": usd_cost(0, total, pin, pout),
        "priced": prices.notna().all(axis=1), "usage_estimated_calls": pd.Series(estimated, index=ok.index).fillna(0),
    }, index=ok.index)


def _sum(values: pd.Series) -> float:
    """The sum, or NaN when any value is missing (a partial sum would understate)."""
    return float(values.sum(min_count=len(values))) if len(values) else 0.0


def _row(costs: pd.DataFrame) -> dict[str, object]:
    n, missing = len(costs), int((~costs["priced"]).sum())
    total, comm = _sum(costs["tokens_total"]), _sum(costs["tokens_comm"])
    row: dict[str, object] = {"runs": n, "total_mtok": total / 1e6, "comm_mtok": comm / 1e6,
                              "comm_pct": 100 * comm / total if total else np.nan,
                              "tokens_per_run": total / n if n else np.nan,
                              "tokens_per_run sd": costs["tokens_total"].std(ddof=1) if n > 1 and not np.isnan(total)
                              else np.nan,
                              "usage_estimated_calls": int(costs["usage_estimated_calls"].sum())}
    for col in ("cost_usd", "cost_mid_usd", "cost_low_usd", "cost_high_usd"):
        row[col] = np.nan if missing else _sum(costs[col])
    notes = [f"no price for {missing} of {n} runs (model preset without `price`): cost unknown"] if missing else []
    unrecorded = int(costs[["tokens_total", "tokens_comm"]].isna().any(axis=1).sum())
    if unrecorded:
        notes.append(f"token counts missing for {unrecorded} runs: their sums are unknown")
    if row["usage_estimated_calls"]:
        notes.append(f"{row['usage_estimated_calls']} calls' tokens estimated locally (no server usage)")
    row["note"] = "; ".join(notes)
    return row


def table4(runs: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Table 4: one row per group of `by` (the served model unless told) plus a Total row."""
    ok = usable(runs)
    keys = list(by)
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS, index=pd.MultiIndex.from_tuples([], names=keys)
                            if len(keys) > 1 else pd.Index([], name=keys[0]))
    costs = _costs(ok)
    rows = {key: _row(costs.loc[group.index]) for key, group in ok.groupby(keys if len(keys) > 1 else keys[0])}
    total = _row(costs) | {"tokens_per_run": np.nan, "tokens_per_run sd": np.nan}
    rows[("Total",) + ("",) * (len(keys) - 1) if len(keys) > 1 else "Total"] = total
    out = pd.DataFrame.from_dict(rows, orient="index")[COLUMNS]
    out.index = pd.MultiIndex.from_tuples(out.index, names=keys) if len(keys) > 1 else out.index.rename(keys[0])
    return out
