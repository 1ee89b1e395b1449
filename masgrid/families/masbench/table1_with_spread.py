"""Table 1 with its sample sizes and dispersion: for each model x condition x protocol cell,
the number of runs and the mean, sample standard deviation and standard error of each
per-run metric (SR%, R, TE, CR%), so a reader can judge which differences are noise."""

from __future__ import annotations

import pandas as pd

from masgrid.families.masbench.phases import DEFAULT
from masgrid.families.masbench.tables import METRICS, for_task
from masgrid.sdk.intervals import mean_se


def table1_spread(runs: pd.DataFrame, task: str | None = "sorting", accounting: str = DEFAULT) -> pd.DataFrame:
    """Rows (model, condition, protocol); columns n, then <metric> mean / sd / se per metric."""
    ok = for_task(runs, task, accounting=accounting)
    keys = ["model", "condition", "protocol"]
    if ok.empty:
        return pd.DataFrame()
    parts = []
    for name, column, scale in METRICS:
        stats = mean_se(ok, keys, column, scale).set_index(keys)
        parts.append(stats[["mean", "sd", "se"]].add_prefix(f"{name} "))
    out = pd.concat(parts, axis=1)
    out.insert(0, "n", ok.groupby(keys)["run_id"].count())
    return out.sort_index()
