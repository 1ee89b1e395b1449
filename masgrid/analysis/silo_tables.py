"""SILO-Bench tables from the `runs` Parquet table (Tables 1, 2, 3, 10, 11, 12, 13, 18).

Conventions, as in the paper: SR is the mean of the per-run success rate S (the fraction
of agents with the correct answer), in percent; PCS likewise; Token is C (output tokens
per round); Den. is D. The multi-agent tables use condition `base` only; Table 2 pairs
each `agents=N` cell with the `oracle-N` baseline runs (agents=1) of the same level and
model; Table 18 compares the scaffold conditions.

Floors: every SILO run records the no-communication floor of its own instance (`floor_sr`,
`floor_pcs`: each agent answering from its own shard alone, envs/tasks/silo/isolated.py).
Tables 1, 3 and 10 show it next to SR and PCS ("SR floor", "PCS floor"), so a reader sees
how much of a score needed no exchange; NaN where runs predate the floor.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from functools import wraps
from typing import Callable

from masgrid.analysis.silo_common import silo_runs

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


def _summary(group: pd.DataFrame) -> dict[str, float]:
    return {"SR": _pct(group["sr"]), "SR floor": _floor(group, "floor_sr"), "PCS": _pct(group["pcs"]),
            "PCS floor": _floor(group, "floor_pcs"), "Token": group["tokens_per_round"].mean(),
            "Den.": group["density"].mean()}


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
            single = _pct(oracle[(oracle["oracle_n"] == k) & (oracle["level"] == level)]["sr"])
            many = _pct(multi[(multi["agents"] == k) & (multi["level"] == level)]["sr"])
            name = f"Level {ROMAN[level]}"
            row[(name, "SR(N=1)")] = single
            row[(name, "SR(N=k)")] = many
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
    table = df.pivot_table(index="level", columns="agents", values="sr", aggfunc="mean") * 100.0
    table.index = [ROMAN[int(v)] for v in table.index]
    table.loc["Avg"] = df.groupby("agents")["sr"].mean() * 100.0
    if "floor_sr" in df and len(df):
        floors = df.assign(floor_sr=df["floor_sr"].astype(float)).pivot_table(
            index="level", columns="agents", values="floor_sr", aggfunc="mean") * 100.0
        floors.index = [f"{ROMAN[int(v)]} floor" for v in floors.index]
        table = pd.concat([table, floors.reindex(columns=table.columns)])
    table.columns = [f"N={int(c)}" for c in table.columns]
    return table


@per_model
def table10(runs: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """SR (%) by task (rows) and protocol (columns), the average over protocols, and the
    task's no-communication floor on the same instances."""
    df = _of_model(runs, model)
    table = df.pivot_table(index="task", columns="protocol", values="sr", aggfunc="mean") * 100.0
    table = table.rename(columns=PROTOCOL_NAMES)
    table["Avg"] = table.mean(axis=1)
    if "floor_sr" in df and len(df):
        table["SR floor"] = df.groupby("task")["floor_sr"].apply(lambda s: _pct(s.dropna().astype(float)))
    return table


def _by_model_protocol_level(runs: pd.DataFrame, value: str, scale: float) -> pd.DataFrame:
    df = base_runs(runs)
    table = df.pivot_table(index=["model", "protocol"], columns="level", values=value, aggfunc="mean") * scale
    table.columns = [f"L-{ROMAN[int(c)]}" for c in table.columns]
    return table.rename(index=PROTOCOL_NAMES, level="protocol")


def table11(runs: pd.DataFrame) -> pd.DataFrame:
    """SR (%) by model, protocol and level."""
    return _by_model_protocol_level(runs, "sr", 100.0)


def table12(runs: pd.DataFrame) -> pd.DataFrame:
    """SR (%) by model (rows) and N (columns)."""
    df = base_runs(runs)
    table = df.pivot_table(index="model", columns="agents", values="sr", aggfunc="mean") * 100.0
    table.columns = [f"N={int(c)}" for c in table.columns]
    return table


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
    table = df.pivot_table(index="condition", columns="level", values="sr", aggfunc="mean") * 100.0
    table.columns = [f"L-{ROMAN[int(c)]} SR" for c in table.columns]
    return table


__all__ = ["rcc", "table1", "table10", "table11", "table12", "table13", "table18", "table2", "table3"]
