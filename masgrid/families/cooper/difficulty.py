"""CooperBench appendix D/E: relative task difficulty, success curves, AUC and retention.

d(t) = 1 - mean over models m of Solo_m(t) (appendix D), rescaled linearly to [0, 1] with the
smallest and largest d(t) of the results; 10 equal-width buckets; per model and setting the
success rate at each bucket midpoint with a 95% Wilson interval; trapezoidal AUC per curve;
Delta AUC = AUC_Solo - AUC_Coop; retention = AUC_Coop / AUC_Solo; a `pooled` model sums the
raw counts of all models per bucket (Algorithm 1). Choices where the paper is silent
(docs/tasks/cooperbench-analysis.md):
- Solo_m(t) with several repeats (seeds) of one model is the mean of their outcomes, so one
  model weighs the same on every task; a task no model ran Solo has no difficulty and its
  runs stay out of the curves (counted in the note); a task missing some models' Solo runs
  gets d(t) from the models that ran it and is flagged.
- Only tasks of two features (the paper's pairs) enter; 3-4 feature tasks are appendix F's.
- Buckets are [b/10, (b+1)/10), the last one closed; every run in a bucket is one trial.
- A curve's AUC integrates over the bucket midpoints where both compared settings have runs
  (np.trapezoid; an empty bucket is skipped, i.e. bridged linearly); fewer than 10 such
  buckets is flagged, fewer than 2 gives no AUC.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from masgrid.families.cooper.analysis import TASK_KEYS, cooper_runs
from masgrid.sdk.intervals import newcombe, wilson_rate

BUCKETS = 10
MIDPOINTS = (np.arange(BUCKETS) + 0.5) / BUCKETS
POOLED = "pooled"
#: tolerance against binary rounding when a rescaled difficulty sits on a bucket edge (k/10)
EDGE_EPS = 1e-9


def _pairs(runs: pd.DataFrame) -> pd.DataFrame:
    df = cooper_runs(runs)
    if df.empty:
        return df
    df = df[(df["n_features"] == 2) & df["success"].notna()]
    return df.assign(task_key=df[TASK_KEYS].astype(str).agg("/".join, axis=1))


def bucket_of(scaled: pd.Series | np.ndarray) -> np.ndarray:
    """Bucket index 0..9 of rescaled difficulties in [0, 1] (1.0 falls in the last bucket)."""
    values = np.asarray(scaled, dtype=float)
    return np.clip(np.floor(values * BUCKETS + EDGE_EPS), 0, BUCKETS - 1).astype(int)


def difficulty(runs: pd.DataFrame) -> pd.DataFrame:
    """Per two-feature task: the models with Solo runs, d(t), the rescaled d~(t), its bucket and a
    flag (models missing, or all tasks equally hard so that rescaling is undefined)."""
    df = _pairs(runs)
    cols = ["task_key", *TASK_KEYS, "models", "d", "d_scaled", "bucket", "flag"]
    solo = df[df["cooper_setting"] == "solo"] if not df.empty else df
    if solo.empty:
        return pd.DataFrame(columns=cols)
    all_models = sorted(solo["model"].astype(str).unique())
    per_model = solo.groupby(["task_key", "model"])["success"].apply(lambda s: s.astype(float).mean())
    rows = []
    keys = solo.drop_duplicates("task_key").set_index("task_key")
    for task, outcomes in per_model.groupby(level="task_key"):
        models = sorted(outcomes.index.get_level_values("model").astype(str))
        missing = [m for m in all_models if m not in models]
        rows.append({"task_key": task, **{k: keys.loc[task, k] for k in TASK_KEYS}, "models": len(models),
                     "d": 1.0 - float(outcomes.mean()),
                     "flag": f"no Solo runs of {', '.join(missing)}" if missing else ""})
    out = pd.DataFrame(rows)
    low, high = out["d"].min(), out["d"].max()
    if high > low:
        out["d_scaled"] = (out["d"] - low) / (high - low)
    else:
        out["d_scaled"] = 0.0
        same = "every task has the same d(t): rescaling undefined, all in bucket 0"
        out["flag"] = [f"{flag}; {same}" if flag else same for flag in out["flag"]]
    out["bucket"] = bucket_of(out["d_scaled"])
    return out[cols]


def curves(runs: pd.DataFrame, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model (and `pooled`), setting and bucket: n, k, success rate and 95% Wilson interval.
    Every bucket appears; an empty one has n = 0, NaN rate and a flag."""
    df = _pairs(runs)
    table = difficulty(runs) if table is None else table
    cols = ["model", "setting", "bucket", "midpoint", "n", "k", "rate", "ci_low", "ci_high", "flag"]
    if df.empty or table.empty:
        return pd.DataFrame(columns=cols)
    df = df.merge(table[["task_key", "bucket"]], on="task_key", how="inner")
    counts = df.groupby(["model", "cooper_setting", "bucket"])["success"].agg(
        n="count", k=lambda s: int(s.astype(bool).sum())).reset_index()
    pooled = counts.groupby(["cooper_setting", "bucket"])[["n", "k"]].sum().reset_index().assign(model=POOLED)
    counts = pd.concat([counts, pooled], ignore_index=True)
    rows = []
    for (model, setting), group in counts.groupby(["model", "cooper_setting"], sort=False):
        by = group.set_index("bucket")
        for b in range(BUCKETS):
            n = int(by.loc[b, "n"]) if b in by.index else 0
            k = int(by.loc[b, "k"]) if b in by.index else 0
            rate, low, high = wilson_rate(k, n)
            rows.append({"model": str(model), "setting": setting, "bucket": b, "midpoint": MIDPOINTS[b],
                         "n": n, "k": k, "rate": rate, "ci_low": low, "ci_high": high,
                         "flag": "" if n else "no runs in this bucket"})
    return pd.DataFrame(rows, columns=cols)


def _area(curve: pd.DataFrame, buckets: list[int]) -> float:
    if len(buckets) < 2:
        return float("nan")
    points = curve.set_index("bucket").loc[buckets]
    return float(np.trapezoid(points["rate"].to_numpy(float), points["midpoint"].to_numpy(float)))


def retention(curve_table: pd.DataFrame) -> pd.DataFrame:
    """Table 4: per model (pooled last) and compared setting (coop, nocomm): Solo and setting
    successes k and trials n, AUC of both curves over their common buckets, Delta AUC and
    retention, the buckets used and a flag when fewer than 10 or no AUC."""
    cols = ["model", "setting", "k_solo", "k_setting", "n_solo", "n_setting", "auc_solo", "auc_setting",
            "delta_auc", "retention", "buckets_used", "flag"]
    if curve_table.empty:
        return pd.DataFrame(columns=cols)
    models = sorted(m for m in curve_table["model"].unique() if m != POOLED) + [POOLED]
    rows = []
    for model in models:
        mine = curve_table[curve_table["model"] == model]
        solo = mine[mine["setting"] == "solo"]
        for setting in ("coop", "nocomm"):
            other = mine[mine["setting"] == setting]
            if other.empty and setting == "nocomm":
                continue
            flags = []
            if solo.empty or other.empty:
                flags.append(f"no {'solo' if solo.empty else setting} runs on tasks with a difficulty")
                common: list[int] = []
            else:
                both = solo.set_index("bucket")["n"].gt(0) & other.set_index("bucket")["n"].gt(0)
                common = [int(b) for b in both[both].index]
            auc_s, auc_o = _area(solo, common), _area(other, common)
            if len(common) < 2:
                flags.append(f"only {len(common)} bucket(s) with both settings: no AUC")
            elif len(common) < BUCKETS:
                flags.append(f"AUC over {len(common)} of {BUCKETS} buckets (empty ones bridged)")
            if not solo.empty and not other.empty and int(solo["n"].sum()) != int(other["n"].sum()):
                flags.append("Solo and this setting have different n (runs missing or unscored)")
            if not np.isnan(auc_s) and auc_s == 0:
                flags.append("Solo AUC is 0: retention undefined")
            rows.append({"model": model, "setting": setting,
                         "k_solo": int(solo["k"].sum()), "k_setting": int(other["k"].sum()),
                         "n_solo": int(solo["n"].sum()), "n_setting": int(other["n"].sum()),
                         "auc_solo": auc_s, "auc_setting": auc_o, "delta_auc": auc_s - auc_o,
                         "retention": auc_o / auc_s if auc_s and not np.isnan(auc_s) else float("nan"),
                         "buckets_used": ",".join(map(str, common)), "flag": "; ".join(flags)})
    return pd.DataFrame(rows, columns=cols)


def difficulty_note(runs: pd.DataFrame, table: pd.DataFrame) -> str:
    """One sentence: tasks with a difficulty, tasks left out for want of Solo runs, flagged tasks."""
    df = _pairs(runs)
    if df.empty:
        return "No scored two-feature CooperBench runs."
    tasks = df["task_key"].nunique()
    known = set(table["task_key"]) if not table.empty else set()
    left = df[~df["task_key"].isin(known)]
    flagged = int((table["flag"] != "").sum()) if not table.empty else 0
    text = (f"Difficulty from Solo outcomes of {df.loc[df['cooper_setting'] == 'solo', 'model'].nunique()} "
            f"model(s): {len(known)} of {tasks} two-feature tasks have one.")
    if len(left):
        text += (f" {left['task_key'].nunique()} tasks ({len(left)} runs) have no Solo run and stay out of "
                 "the curves.")
    if flagged:
        text += f" {flagged} tasks are flagged (see difficulty.csv)."
    return text


def gap_by_difficulty(curve_table: pd.DataFrame, second: str = "coop") -> pd.DataFrame:
    """Figure 3 (right): per model (and pooled) and bucket, Solo rate minus `second`'s rate with
    Newcombe's 95% interval (NaN and a flag where either bucket is empty)."""
    cols = ["model", "bucket", "midpoint", "n_solo", "n_setting", "gap", "ci_low", "ci_high", "flag"]
    if curve_table.empty:
        return pd.DataFrame(columns=cols)
    wide = curve_table[curve_table["setting"].isin(("solo", second))].pivot_table(
        index=["model", "bucket", "midpoint"], columns="setting", values=["n", "k"], aggfunc="sum", fill_value=0)
    rows = []
    for (model, bucket, midpoint), row in wide.iterrows():
        ns, ks = int(row.get(("n", "solo"), 0)), int(row.get(("k", "solo"), 0))
        no, ko = int(row.get(("n", second), 0)), int(row.get(("k", second), 0))
        diff, low, high = newcombe(ks, ns, ko, no)
        rows.append({"model": model, "bucket": int(bucket), "midpoint": midpoint, "n_solo": ns, "n_setting": no,
                     "gap": diff, "ci_low": low, "ci_high": high,
                     "flag": "" if ns and no else "empty bucket in " + " and ".join(
                         s for s, n in (("solo", ns), (second, no)) if not n)})
    out = pd.DataFrame(rows, columns=cols)
    order = sorted(m for m in out["model"].unique() if m != POOLED) + [POOLED]
    return out.set_index("model").loc[[m for m in order if m in set(out["model"])]].reset_index()
