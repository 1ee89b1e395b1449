"""SILO tables on a small synthetic runs dataset written to and read back from Parquet."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from masgrid.families.silo import tables as st
from masgrid._private.analysis.load import load_results

LEVEL_SR = {"I": 0.8, "II": 0.5, "III": 0.2}
PROTO_BONUS = {"broadcast": 0.1, "p2p": 0.0, "kv": -0.1}


def synthetic(tmp_path: Path) -> pd.DataFrame:
    rows = []
    for model, task, protocol, n in itertools.product(("m1", "m2"), ("silo/I-01", "silo/II-11", "silo/III-21"),
                                                      ("broadcast", "p2p", "kv"), (2, 10)):
        level = task.split("/")[1].split("-")[0]
        sr = LEVEL_SR[level] + PROTO_BONUS[protocol] - (0.1 if n == 10 else 0.0) - (0.2 if model == "m2" else 0.0)
        rows.append({"run_id": f"{model}{task}{protocol}{n}", "task": task, "protocol": protocol, "agents": n,
                     "condition": "base", "model": model, "status": "ok", "sr": sr, "pcs": sr + 0.1,
                     "tokens_per_round": 10.0 * n, "density": 2.0 if protocol == "p2p" else 1.0, "success": sr == 1})
    for model, task, n in itertools.product(("m1", "m2"), ("silo/I-01", "silo/II-11", "silo/III-21"), (2, 10)):
        rows.append({"run_id": f"o{model}{task}{n}", "task": task, "protocol": "p2p", "agents": 1,
                     "condition": f"oracle-{n}", "model": model, "status": "ok", "sr": 1.0 if n == 2 else 0.5,
                     "pcs": 1.0, "tokens_per_round": 5.0, "density": None, "success": n == 2})
    rows.append({**rows[0], "run_id": "x", "condition": "planning", "sr": 1.0})
    rows.append({**rows[0], "run_id": "y", "task": "sorting", "sr": 0.0})  # not SILO: ignored
    rows.append({**rows[0], "run_id": "z", "status": "failed", "sr": 0.0})  # failed run: ignored
    df = pd.DataFrame(rows)
    (tmp_path / "runs").mkdir()
    df.to_parquet(tmp_path / "runs" / "part-0.parquet")
    return load_results(tmp_path).runs


def test_table1(tmp_path: Path) -> None:
    t1 = st.table1(synthetic(tmp_path))
    assert t1.loc[("protocol", "BP"), ("m1", "SR")] == pytest.approx(100 * np.mean([0.9, 0.8, 0.6, 0.5, 0.3, 0.2]))
    assert t1.loc[("level", "Level III"), ("m2", "SR")] == pytest.approx(100 * np.mean([0.1, 0.0, 0.0, -0.1,
                                                                                         -0.1, -0.2]))
    assert t1.loc[("scale", "N = 10"), ("m1", "Token")] == pytest.approx(100.0)
    assert t1.loc[("protocol", "P2P"), ("m1", "Den.")] == pytest.approx(2.0)
    assert t1.loc[("average", "Average"), ("m1", "PCS")] == pytest.approx(t1.loc[("average", "Average"),
                                                                                 ("m1", "SR")] + 10)


def test_table2_rcc(tmp_path: Path) -> None:
    t2 = st.table2(synthetic(tmp_path), model="m1")
    assert t2.loc["k = 2", ("Level I", "SR(N=1)")] == pytest.approx(100.0)
    assert t2.loc["k = 2", ("Level I", "SR(N=k)")] == pytest.approx(80.0)
    assert t2.loc["k = 2", ("Level I", "RCC")] == pytest.approx(20.0)
    assert t2.loc["k = 10", ("Level III", "RCC")] == pytest.approx(100 * (1 - 10 / 50))
    assert np.isnan(st.rcc(0.3, 0.0))


def test_tables_3_10_11_12_13_18(tmp_path: Path) -> None:
    runs = synthetic(tmp_path)
    t3 = st.table3(runs, model="m1")
    assert t3.loc["I", "N=2"] == pytest.approx(80.0) and t3.loc["III", "N=10"] == pytest.approx(10.0)
    assert t3.loc["Avg", "N=2"] == pytest.approx(50.0)
    t10 = st.table10(runs, model="m1")
    assert t10.loc["silo/I-01", "BP"] == pytest.approx(85.0) and t10.loc["silo/I-01", "Avg"] == pytest.approx(75.0)
    t11 = st.table11(runs)
    assert t11.loc[("m2", "SFS"), "L-II"] == pytest.approx(100 * np.mean([0.2, 0.1]))
    t12 = st.table12(runs)
    assert t12.loc["m1", "N=2"] - t12.loc["m1", "N=10"] == pytest.approx(10.0)
    t13 = st.table13(runs)
    assert t13.loc[("m1", "P2P"), "L-I"] == 2.0 and t13.loc[("m1", "BP"), "L-III"] == 1.0
    t18 = st.table18(runs, model="m1")
    assert t18.loc["planning", "L-I SR"] == 100.0 and "oracle-2" not in t18.index


def test_tables_without_a_model_argument_keep_models_apart(tmp_path: Path) -> None:
    runs = synthetic(tmp_path)
    for build in (st.table2, st.table3, st.table10, st.table18):
        table = build(runs)
        assert table.index.names[0] == "model" and sorted(set(table.index.get_level_values(0))) == ["m1", "m2"]
        assert table.loc["m1"].equals(build(runs, model="m1"))  # each block is the one-model table
    t3 = st.table3(runs)
    assert t3.loc[("m2", "I"), "N=2"] == pytest.approx(100 * np.mean([0.7, 0.6, 0.5]))


def _random_runs(seed: int) -> pd.DataFrame:
    """Random SILO runs: uneven cells (some of one run), failed runs that must not count."""
    rng = random.Random(seed)
    rows = []
    for i in range(rng.randint(30, 80)):
        rows.append({"run_id": f"r{i}", "task": rng.choice(["silo/I-01", "silo/I-02", "silo/II-11", "silo/III-21"]),
                     "protocol": rng.choice(["broadcast", "p2p", "kv"]), "agents": rng.choice([2, 5, 10]),
                     "condition": rng.choice(["base", "base", "base", "planning"]), "model": "m1",
                     "status": rng.choice(["ok", "ok", "ok", "degraded", "failed"]), "sr": rng.random(),
                     "pcs": rng.random(), "floor_sr": rng.random(), "floor_pcs": rng.random(),
                     "tokens_per_round": rng.uniform(10, 500), "density": rng.uniform(0, 3), "success": False})
    return pd.DataFrame(rows)


def _by_hand(values: list[float], scale: float) -> tuple[float, float, int]:
    """Mean, sample SD (NaN below two) and n, in plain Python."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else math.nan
    return scale * mean, scale * sd, n


def _check(table: pd.DataFrame, row, column: str, values: list[float], scale: float) -> None:
    mean, sd, n = _by_hand(values, scale)
    assert table.loc[row, column] == pytest.approx(mean)
    assert table.loc[row, f"{column} n"] == n
    got = table.loc[row, f"{column} sd"]
    assert math.isnan(got) if math.isnan(sd) else got == pytest.approx(sd)


@pytest.mark.parametrize("seed", range(6))
def test_every_mean_over_runs_has_its_sd_and_n(seed: int) -> None:
    runs = _random_runs(seed)
    ok = [r for r in runs.to_dict("records") if r["status"] in ("ok", "degraded")]
    base = [r for r in ok if r["condition"] == "base"]
    level = {"silo/I-01": "I", "silo/I-02": "I", "silo/II-11": "II", "silo/III-21": "III"}
    names = {"broadcast": "BP", "p2p": "P2P", "kv": "SFS"}

    t3 = st.table3(runs)
    for r in t3.index:
        for column in [c for c in t3.columns if not c.endswith((" sd", " n"))]:
            agents = int(column.split("=")[1])
            key = "floor_sr" if r.endswith("floor") else "sr"
            values = [x[key] for x in base if x["agents"] == agents and (r == "Avg" or level[x["task"]] == r.split()[0])]
            if values:
                _check(t3, r, column, values, 100.0)
    t12 = st.table12(runs)
    for column in [c for c in t12.columns if not c.endswith((" sd", " n"))]:
        _check(t12, "m1", column, [x["sr"] for x in base if x["agents"] == int(column[2:])], 100.0)
    for table, key, scale in ((st.table11(runs), "sr", 100.0), (st.table13(runs), "density", 1.0)):
        for (model, protocol) in table.index:
            for column in [c for c in table.columns if not c.endswith((" sd", " n"))]:
                values = [x[key] for x in base if names[x["protocol"]] == protocol and level[x["task"]] == column[2:]]
                if values:
                    _check(table, (model, protocol), column, values, scale)
    t10 = st.table10(runs)
    for task in t10.index:
        for protocol in ("BP", "P2P", "SFS"):
            values = [x["sr"] for x in base if x["task"] == task and names[x["protocol"]] == protocol]
            if values:
                _check(t10, task, protocol, values, 100.0)
        _check(t10, task, "SR floor", [x["floor_sr"] for x in base if x["task"] == task], 100.0)
        assert t10.loc[task, "Avg n"] == sum(1 for x in base if x["task"] == task)
    t18 = st.table18(runs)
    for condition in t18.index:
        for column in [c for c in t18.columns if not c.endswith((" sd", " n"))]:
            values = [x["sr"] for x in ok if x["condition"] == condition and level[x["task"]] == column[2:-3]]
            if values:
                _check(t18, condition, column, values, 100.0)
    t1 = st.table1(runs)
    for metric, key, scale in (("SR", "sr", 100.0), ("PCS", "pcs", 100.0), ("Token", "tokens_per_round", 1.0),
                               ("Den.", "density", 1.0), ("SR floor", "floor_sr", 100.0)):
        mean, sd, n = _by_hand([x[key] for x in base], scale)
        assert t1.loc[("average", "Average"), ("m1", metric)] == pytest.approx(mean)
        assert t1.loc[("average", "Average"), ("m1", f"{metric} sd")] == pytest.approx(sd)
        assert t1.loc[("average", "Average"), ("m1", "n")] == n
