"""SILO tables on a small synthetic runs dataset written to and read back from Parquet."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from masgrid.analysis import silo_tables as st
from masgrid.analysis.load import load_results

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
