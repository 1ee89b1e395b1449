"""SILO-Bench tables from the `runs` Parquet table (Tables 1, 2, 3, 10, 11, 12, 13, 18).

Conventions, as in the paper: SR is the mean of the per-run success rate S (the fraction
of agents with the correct answer), in percent; PCS likewise; Token is C (output tokens
per round); Den. is D. The multi-agent tables use condition `base` only; Table 2 pairs
each `agents=N` cell with the `oracle-N` baseline runs (agents=1) of the same level and
model; Table 18 compares the scaffold conditions.

Floors: every SILO run records the no-communication floor of its own instance (`floor_sr`,
`floor_pcs`: each agent answering from its own shard alone, families/silo/isolated.py).
Tables 1, 3 and 10 show it next to SR and PCS ("SR floor", "PCS floor"), so a reader sees
how much of a score needed no exchange; NaN where runs predate the floor.

Spread: every cell that is a mean over runs has, next to it, "<cell> sd" (the sample standard
deviation over those runs, ddof = 1, in the cell's unit: SR and PCS in points; NaN with one
run) and "<cell> n" (the runs averaged). SR is a mean of per-run fractions, not a count of
successes over runs, so its dispersion is an SD rather than a binomial (Wilson) interval.
Cells that are not means over runs carry no SD: RCC (a ratio of two means: both have theirs)
and Table 10's Avg (the mean of the protocol means: its n counts the runs under it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import numpy as np
import pandas as pd

from masgrid.families.silo.common import silo_runs

TableBuilder = Callable[..., pd.DataFrame]


def per_model(build: TableBuilder) -> TableBuilder:
    """Tables with a `model` argument: called without one on runs of several models, they
    return one block per model (a leading `model` index level), never a pool of models."""
    @wraps(build)
    def wrapper(runs: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
        models = sorted(set(silo_runs(runs)["model"].dropna()), key=str) if model is None and not runs.empty else []
        if len(models) <= 1:
            return build(runs, model)
        return pd.concat({m: build(runs, m) for m in models}, names=["model"])
    return wrapper

ROMAN = {1: "I", 2: "II", 3: "III"}
PROTOCOL_NAMES = {"broadcast": "BP", "p2p": "P2P", "kv": "SFS"}


def base_runs(runs: pd.DataFrame) -> pd.DataFrame:
    out = silo_runs(runs)
    return out[out["condition"] == "base"]


def _of_model(runs: pd.DataFrame, model: str | None) -> pd.DataFrame:
    df = base_runs(runs)
    return df if model is None else df[df["model"] == model]


def _pct(series: pd.Series) -> float:
    return 100.0 * series.mean() if len(series) else np.nan


def _floor(group: pd.DataFrame, column: str) -> float:
    return _pct(group[column].dropna().astype(float)) if column in group else np.nan


def _sd(series: pd.Series, scale: float = 1.0) -> float:
    """Sample SD (ddof = 1) over runs times `scale`; NaN below two values."""
    values = series.dropna().astype(float)
    return scale * float(values.std(ddof=1)) if len(values) > 1 else np.nan


def _summary(group: pd.DataFrame) -> dict[str, float]:
    floor_sd = {f"{m} floor sd": _sd(group[c], 100.0) if c in group else np.nan
                for m, c in (("SR", "floor_sr"), ("PCS", "floor_pcs"))}
    return {"SR": _pct(group["sr"]), "SR sd": _sd(group["sr"], 100.0), "SR floor": _floor(group, "floor_sr"),
            "SR floor sd": floor_sd["SR floor sd"], "PCS": _pct(group["pcs"]), "PCS sd": _sd(group["pcs"], 100.0),
            "PCS floor": _floor(group, "floor_pcs"), "PCS floor sd": floor_sd["PCS floor sd"],
            "Token": group["tokens_per_round"].mean(), "Token sd": _sd(group["tokens_per_round"]),
            "Den.": group["density"].mean(), "Den. sd": _sd(group["density"]), "n": float(len(group))}


def _spread_pivot(df: pd.DataFrame, index: str | list[str], columns: str, value: str, scale: float,
                  name: Callable[[Any], str]) -> pd.DataFrame:
    """pivot_table(mean) of `value` x `scale` with each column `name(c)` followed by
    `name(c) sd` (sample SD over the runs) and `name(c) n` (runs with a value). `c` is a
    value of the `columns` column as pandas gives it (untyped: N, a level, a protocol)."""
    keys = [index] if isinstance(index, str) else list(index)
    data = df.assign(**{value: df[value].astype(float)}) if value in df else df.assign(**{value: np.nan})
    grouped = data.groupby([*keys, columns])[value]
    parts = {"": grouped.mean() * scale, " sd": grouped.std(ddof=1) * scale, " n": grouped.count()}
    frames = {suffix: series.unstack(columns) for suffix, series in parts.items()}
    order = list(frames[""].columns)
    if not order:  # no runs: an empty table indexed like the full one
        return frames[""]
    return pd.concat([frames[suffix][[c]].set_axis([f"{name(c)}{suffix}"], axis=1)
                      for c in order for suffix in parts], axis=1)


def table1(runs: pd.DataFrame) -> pd.DataFrame:
    """Overall summary: per model, SR/PCS/Token/Den. by protocol, by level, by N, and on average."""
    df = base_runs(runs)
    blocks = []
    for dimension, key, label in (("protocol", "protocol", lambda v: PROTOCOL_NAMES.get(v, v)),
                                  ("level", "level", lambda v: f"Level {ROMAN[int(v)]}"),
                                  ("scale", "agents", lambda v: f"N = {int(v)}")):
        for value, group in df.groupby(key, sort=True):
            blocks.append(((dimension, label(value)), group))
    blocks.append((("average", "Average"), df))
    rows = {}
    for index, group in blocks:
        rows[index] = {(model, metric): value for model, g in group.groupby("model", sort=True)
                       for metric, value in _summary(g).items()}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index = pd.MultiIndex.from_tuples(table.index, names=["dimension", "value"])
    if len(table.columns):
        table.columns = pd.MultiIndex.from_tuples(table.columns, names=["model", "metric"])
    return table


def rcc(sr_multi: float, sr_single: float) -> float:
    """Relative coordination cost 1 - SR(N=k) / SR(N=1); undefined when SR(N=1) = 0."""
    if sr_single is None or np.isnan(sr_single) or sr_single == 0:
        return np.nan
    return 1.0 - sr_multi / sr_single


@per_model
def table2(runs: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """SR(N=1), SR(N=k) and RCC by scale k and level (one model, default: all runs pooled)."""
    df = silo_runs(runs)
    if model is not None:
        df = df[df["model"] == model]
    multi = df[df["condition"] == "base"]
    oracle = df[df["oracle_n"].notna()]
    rows = {}
    for k in sorted(set(multi["agents"]) | set(oracle["oracle_n"].dropna().astype(int))):
        row = {}
        for level in sorted(set(df["level"].dropna().astype(int))):
            singles = oracle[(oracle["oracle_n"] == k) & (oracle["level"] == level)]["sr"]
            manys = multi[(multi["agents"] == k) & (multi["level"] == level)]["sr"]
            single, many = _pct(singles), _pct(manys)
            name = f"Level {ROMAN[level]}"
            for label, series, mean in (("SR(N=1)", singles, single), ("SR(N=k)", manys, many)):
                row[(name, label)] = mean
                row[(name, f"{label} sd")] = _sd(series, 100.0)
                row[(name, f"{label} n")] = float(series.count())
            row[(name, "RCC")] = 100.0 * rcc(many, single)
        rows[f"k = {k}"] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    if len(table.columns):
        table.columns = pd.MultiIndex.from_tuples(table.columns, names=["level", "metric"])
    return table


@per_model
def table3(runs: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """SR (%) by level (rows, plus Avg) and N (columns), averaged over protocols; each level's
    no-communication floor (SR an isolated agent reaches on the same instances) in a row below it."""
    df = _of_model(runs, model)
    label = lambda c: f"N={int(c)}"  # noqa: E731
    table = _spread_pivot(df, "level", "agents", "sr", 100.0, label)
    table.index = [ROMAN[int(v)] for v in table.index]
    average = _spread_pivot(df.assign(all="Avg"), "all", "agents", "sr", 100.0, label)
    if len(df):
        table = pd.concat([table, average.reindex(columns=table.columns)])
    if "floor_sr" in df and len(df):
        floors = _spread_pivot(df, "level", "agents", "floor_sr", 100.0, label)
        floors.index = [f"{ROMAN[int(v)]} floor" for v in floors.index]
        table = pd.concat([table, floors.reindex(columns=table.columns)])
    return table


@per_model
def table10(runs: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """SR (%) by task (rows) and protocol (columns), the average over protocols, and the
    task's no-communication floor on the same instances."""
    df = _of_model(runs, model)
    table = _spread_pivot(df, "task", "protocol", "sr", 100.0, lambda c: PROTOCOL_NAMES.get(c, c))
    means = table[[PROTOCOL_NAMES.get(c, c) for c in sorted(set(df["protocol"]))]]
    table["Avg"] = means.mean(axis=1)
    table["Avg n"] = df.groupby("task")["sr"].count()
    if "floor_sr" in df and len(df):
        floors = df.groupby("task")["floor_sr"]
        table["SR floor"] = floors.apply(lambda s: _pct(s.dropna().astype(float)))
        table["SR floor sd"] = floors.apply(lambda s: _sd(s, 100.0))
        table["SR floor n"] = floors.count()
    return table


def _by_model_protocol_level(runs: pd.DataFrame, value: str, scale: float) -> pd.DataFrame:
    df = base_runs(runs)
    table = _spread_pivot(df, ["model", "protocol"], "level", value, scale, lambda c: f"L-{ROMAN[int(c)]}")
    return table.rename(index=PROTOCOL_NAMES, level="protocol")


def table11(runs: pd.DataFrame) -> pd.DataFrame:
    """SR (%) by model, protocol and level."""
    return _by_model_protocol_level(runs, "sr", 100.0)


def table12(runs: pd.DataFrame) -> pd.DataFrame:
    """SR (%) by model (rows) and N (columns)."""
    return _spread_pivot(base_runs(runs), "model", "agents", "sr", 100.0, lambda c: f"N={int(c)}")


def table13(runs: pd.DataFrame) -> pd.DataFrame:
    """Communication density D by model, protocol and level."""
    return _by_model_protocol_level(runs, "density", 1.0)


@per_model
def table18(runs: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """Scaffold ablation (appendix H): SR (%) by condition and level."""
    df = silo_runs(runs)
    df = df[df["oracle_n"].isna()]
    if model is not None:
        df = df[df["model"] == model]
    return _spread_pivot(df, "condition", "level", "sr", 100.0, lambda c: f"L-{ROMAN[int(c)]} SR")


__all__ = ["rcc", "table1", "table10", "table11", "table12", "table13", "table18", "table2", "table3"]
