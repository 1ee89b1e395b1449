"""MAS-Bench Table 11 (appendix G.4): one model x protocol cell across the four conditions.

The paper shows the cell where CAMOC regressed (Qwen3 on P2P): SR under Base, each
ablation and CAMOC. masgrid writes every (model, protocol) cell of the main task, each
condition's SR%, success% (whole instances; G.4 speaks of success rates), each with its
sample SD over runs, and run count,
and the Welch p-value of the condition's per-run SR against Base (analysis/stats.py), so
the regression the paper found by a t-test sweep can be read off the same table, next to
its Holm-adjusted value over all the table's tests (p_vs_base_holm).
"""

from __future__ import annotations

import pandas as pd

from masgrid.families.masbench.tables import for_task, with_success
from masgrid.sdk.stats import holm, welch

METRICS = ("SR%", "SR% sd", "success%", "success% sd", "runs", "p_vs_base", "p_vs_base_holm")
#: the paper's row order: Base, the two ablations, CAMOC
ORDER = ("base", "abl_message", "abl_submit", "camoc")


def table11(runs: pd.DataFrame, task: str | None = "sorting") -> pd.DataFrame:
    """Rows (model, protocol); columns (condition, SR% | success% | runs | p_vs_base)."""
    ok = for_task(runs, task)
    if ok.empty:
        return pd.DataFrame()
    cells = with_success(ok, ["model", "protocol", "condition"])
    sr = {key: group["sr"].to_numpy(dtype=float) for key, group in ok.groupby(["model", "protocol", "condition"])}
    cells["p_vs_base"] = [welch(sr[(m, p, "base")], sr[(m, p, c)])[1] if c != "base" and (m, p, "base") in sr
                          else float("nan") for m, p, c in cells.index]
    cells["p_vs_base_holm"] = holm(cells["p_vs_base"])  # the whole table is one family of tests
    wide = cells.unstack("condition").swaplevel(0, 1, axis=1)
    present = list(dict.fromkeys(wide.columns.get_level_values(0)))
    conditions = [c for c in ORDER if c in present] + sorted(c for c in present if c not in ORDER)
    return wide.reindex(columns=pd.MultiIndex.from_product([conditions, list(METRICS)])).sort_index()
