"""MAS-Bench tables on a synthetic results dataset whose aggregates are computed here by hand.

The dataset is written by the real recorder (Hive-partitioned Parquet); expected values come
from plain Python loops over the rows, never from pandas groupby, so a wrong groupby, scale,
filter or orientation in masgrid._private.analysis fails these tests.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict
from pathlib import Path

import pytest
from scipy import stats

from masgrid._private.analysis import load_results
from masgrid.families.masbench.tables import table1, table2, table3, table6, table7, table8, table9, table10
from masgrid._private.analysis.stats import welch_tests
from masgrid._private.platform.results.recorder import SCHEMAS, Recorder, partition_dir, write_table_atomic

MODELS = ("model-a", "model-b")
PROTOCOLS = ("broadcast", "p2p", "kv")
CONDITIONS = ("base", "camoc", "abl_submit", "abl_message")


def _rows() -> list[dict]:
    rng = random.Random(7)
    rows = []
    grid = itertools.product(("sorting", "max"), MODELS, PROTOCOLS, CONDITIONS, (1, 3), (1, 5), ("asc", "random"),
                             (0, 1))
    for i, (task, model, protocol, condition, agents, k, mode, seed) in enumerate(grid):
        correct = rng.randint(0, agents)
        tokens = rng.randint(500, 5000)
        rows.append({
            "run_id": f"r{i:05d}", "task": task, "protocol": protocol, "agents": agents, "k": k, "mode": mode,
            "condition": condition, "backend": "openai", "model": model, "seed": seed, "max_rounds": 100,
            "status": "ok", "success": correct == agents, "sr": correct / agents,
            "rounds": rng.randint(1, 40), "te": agents * k / tokens * 1e5, "cr": rng.random() * 0.2,
            "rho": 0.0 if mode == "asc" else rng.random(), "tokens_total": tokens,
        })
    # failed runs: excluded from every table whatever their (absurd) metrics say
    for j in range(3):
        rows.append({**rows[j], "run_id": f"fail{j}", "status": "failed", "error": "boom", "sr": 99.0,
                     "tokens_total": 10**9, "success": True, "rounds": 10**6})
    return rows


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("results")
    rec = Recorder(root)
    rows = _rows()
    ok = [r for r in rows if r["status"] == "ok"]
    # the ok runs in one file per partition (as a compacted dataset), the failed ones as the
    # recorder writes them, one file per run: both layouts must read back as one table
    for (task, protocol), part in _group_rows(ok, ("task", "protocol")).items():
        write_table_atomic(partition_dir(rec.root, "runs", {"task": task, "protocol": protocol}) / f"part-{task}.parquet",
                           part, SCHEMAS["runs"])
    for row in rows:
        if row["status"] != "ok":
            rec.finish_run(row, [], {"task": row["task"], "protocol": row["protocol"]})
    return root, ok


def _group_rows(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _sd(values: list[float]) -> float:
    """Sample SD (n - 1 in the denominator) by its textbook formula; NaN below two values."""
    if len(values) < 2:
        return math.nan
    m = _mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _approx(value: float) -> object:
    return pytest.approx(value, nan_ok=True)


def _group(rows: list[dict], keys: tuple[str, ...], field: str) -> dict[tuple, list[float]]:
    out: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r[field])
    return out


def test_load_reads_partitioned_dataset(dataset):
    root, ok = dataset
    runs = load_results(root).runs
    assert len(runs) == len(ok) + 3
    assert set(runs["protocol"]) == set(PROTOCOLS)
    import pandas as pd

    assert not isinstance(runs["task"].dtype, pd.CategoricalDtype)  # partition keys as plain strings
    # plain pandas and pyarrow.dataset (with partition pruning) read the same dataset
    assert len(pd.read_parquet(root / "runs")) == len(runs)
    import pyarrow.dataset as ds

    kv = ds.dataset(root / "runs", format="parquet", partitioning="hive").to_table(filter=ds.field("protocol") == "kv")
    assert kv.num_rows == sum(r["protocol"] == "kv" for r in ok)  # failed runs are broadcast


def test_table1_model_condition_protocol(dataset):
    root, ok = dataset
    t1 = table1(load_results(root).runs)
    sorting = [r for r in ok if r["task"] == "sorting"]
    keys = ("model", "condition", "protocol")
    assert list(t1.index) == [(m, c) for m in MODELS for c in CONDITIONS]
    assert list(t1.columns.get_level_values(0).unique()) == list(PROTOCOLS)
    for field, col, scale in (("sr", "SR%", 100), ("rounds", "R", 1), ("te", "TE", 1), ("cr", "CR%", 100)):
        for (m, c, p), values in _group(sorting, keys, field).items():
            assert t1.loc[(m, c), (p, col)] == pytest.approx(scale * _mean(values)), (m, c, p, col)


def test_table2_sr_by_n_and_k(dataset):
    root, ok = dataset
    runs = load_results(root).runs
    t2 = table2(runs)
    sorting = [r for r in ok if r["task"] == "sorting" and r["condition"] == "base"]  # Base unless asked
    assert list(t2.index) == [(m, n) for m in MODELS for n in (1, 3)]  # never averaged over models
    for (m, n, p, k), values in _group(sorting, ("model", "agents", "protocol", "k"), "sr").items():
        assert t2.loc[(m, n), (p, k, "SR%")] == pytest.approx(100 * _mean(values))
        assert t2.loc[(m, n), (p, k, "SR% sd")] == _approx(100 * _sd(values))
        assert t2.loc[(m, n), (p, k, "SR% n")] == len(values)
    camoc = table2(runs, condition="camoc")
    for (m, n, p, k), values in _group([r for r in ok if r["task"] == "sorting" and r["condition"] == "camoc"],
                                       ("model", "agents", "protocol", "k"), "sr").items():
        assert camoc.loc[(m, n), (p, k, "SR%")] == pytest.approx(100 * _mean(values))
        assert camoc.loc[(m, n), (p, k, "SR% sd")] == _approx(100 * _sd(values))


def test_table3_by_input_family(dataset):
    root, ok = dataset
    t3 = table3(load_results(root).runs)
    sorting = [r for r in ok if r["task"] == "sorting" and r["condition"] == "base"]
    assert list(t3.index) == [(m, mode) for m in MODELS for mode in ("asc", "random")]  # by disorder
    for key, values in _group(sorting, ("model", "mode"), "sr").items():
        assert t3.loc[key, "SR%"] == pytest.approx(100 * _mean(values))
        assert t3.loc[key, "runs"] == len(values)
    for field, name, scale in (("sr", "SR%", 100), ("rounds", "R", 1), ("te", "TE", 1), ("cr", "CR%", 100)):
        for key, values in _group(sorting, ("model", "mode"), field).items():
            assert t3.loc[key, f"{name} sd"] == _approx(scale * _sd(values)), (field, key)
            assert t3.loc[key, f"{name} n"] == len(values)
    assert t3.loc[("model-a", "asc"), "rho"] == 0.0
    for key, values in _group(sorting, ("model", "mode"), "rho").items():
        assert t3.loc[key, "rho sd"] == _approx(_sd(values))


def test_table6_tokens_per_backend(dataset):
    root, ok = dataset
    t6 = table6(load_results(root).runs)
    sorting = [r for r in ok if r["task"] == "sorting"]
    for m, p in itertools.product(MODELS, PROTOCOLS):
        mine = [r for r in sorting if r["protocol"] == p and r["model"] == m]
        base = _mean([r["tokens_total"] for r in mine if r["condition"] != "camoc"])
        camoc = _mean([r["tokens_total"] for r in mine if r["condition"] == "camoc"])
        assert t6.loc[(m, p), "base_abl_tokens"] == pytest.approx(base)
        assert t6.loc[(m, p), "camoc_tokens"] == pytest.approx(camoc)
        assert t6.loc[(m, p), "delta_pct"] == pytest.approx((camoc / base - 1) * 100)
        for col, sel in (("base_abl", [r for r in mine if r["condition"] != "camoc"]),
                         ("camoc", [r for r in mine if r["condition"] == "camoc"])):
            assert t6.loc[(m, p), f"{col}_tokens sd"] == _approx(_sd([r["tokens_total"] for r in sel]))
            assert t6.loc[(m, p), f"{col}_runs"] == len(sel)


def test_table7_tokens_per_correct_instance(dataset):
    root, ok = dataset
    t7 = table7(load_results(root).runs)
    for m in MODELS:
        per = {}
        for c in ("base", "camoc"):
            sel = [r for r in ok if r["task"] == "sorting" and r["protocol"] == "kv" and r["model"] == m
                   and r["condition"] == c]
            per[c] = sum(r["tokens_total"] for r in sel) / sum(r["success"] for r in sel)
            assert t7.loc[m, c] == pytest.approx(per[c])
        assert t7.loc[m, "change_pct"] == pytest.approx((per["camoc"] / per["base"] - 1) * 100)
        assert "reduction_pct" not in t7.columns  # a CAMOC increase must not read as a reduction


def test_tables_8_9_10(dataset):
    root, ok = dataset
    runs = load_results(root).runs
    t8 = table8(runs)
    for (m, p), values in _group([r for r in ok if r["task"] == "sorting" and r["agents"] == 1
                                  and r["condition"] == "base"],
                                 ("model", "protocol"), "tokens_total").items():
        assert t8.loc[(m, p), "tokens_per_run"] == pytest.approx(_mean(values))
        assert t8.loc[(m, p), "tokens_per_run sd"] == _approx(_sd(values))
        assert t8.loc[(m, p), "runs"] == len(values)
    t9 = table9(runs)
    base = [r for r in ok if r["condition"] == "base"]
    for (task, m), values in _group(base, ("task", "model"), "sr").items():
        assert t9.loc[task, (m, "SR%")] == pytest.approx(100 * _mean(values))
    for (task, m), values in _group(base, ("task", "model"), "success").items():
        assert t9.loc[task, (m, "success%")] == pytest.approx(100 * sum(values) / len(values))  # whole instances
        assert t9.loc[task, (m, "success% sd")] == _approx(100 * _sd([float(v) for v in values]))
        assert t9.loc[task, (m, "runs")] == len(values)
    for (task, m), values in _group(base, ("task", "model"), "sr").items():
        assert t9.loc[task, (m, "SR% sd")] == _approx(100 * _sd(values))
    t10 = table10(runs)
    for (m, c, task), values in _group(ok, ("model", "condition", "task"), "sr").items():
        assert t10.loc[(m, c), (task, "SR%")] == pytest.approx(100 * _mean(values))
    for (m, c, task), values in _group(ok, ("model", "condition", "task"), "success").items():
        assert t10.loc[(m, c), (task, "success%")] == pytest.approx(100 * sum(values) / len(values))
        assert t10.loc[(m, c), (task, "success% sd")] == _approx(100 * _sd([float(v) for v in values]))
        assert t10.loc[(m, c), (task, "runs")] == len(values)
    for (m, c, task), values in _group(ok, ("model", "condition", "task"), "sr").items():
        assert t10.loc[(m, c), (task, "SR% sd")] == _approx(100 * _sd(values))


def test_welch_conditions_against_base(dataset):
    root, ok = dataset
    runs = load_results(root).runs
    res = welch_tests(runs[runs["task"] == "sorting"], "sr", "condition", ("model", "protocol"), "base")
    assert len(res) == len(MODELS) * len(PROTOCOLS) * 3
    row = res[(res["model"] == "model-b") & (res["protocol"] == "kv") & (res["group_b"] == "camoc")].iloc[0]
    a = [r["sr"] for r in ok if (r["task"], r["model"], r["protocol"], r["condition"]) == ("sorting", "model-b", "kv", "base")]
    b = [r["sr"] for r in ok if (r["task"], r["model"], r["protocol"], r["condition"]) == ("sorting", "model-b", "kv", "camoc")]
    # Welch's t by its textbook formula, and the p-value from scipy's t distribution
    va = sum((x - _mean(a)) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - _mean(b)) ** 2 for x in b) / (len(b) - 1)
    se2 = va / len(a) + vb / len(b)
    t = (_mean(b) - _mean(a)) / math.sqrt(se2)  # group_b - group_a, the sign of `diff`
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    assert row["t"] == pytest.approx(t)
    assert row["diff"] == pytest.approx(_mean(b) - _mean(a))
    assert t != 0 and (row["t"] > 0) == (row["diff"] > 0)
    assert row["p"] == pytest.approx(2 * stats.t.sf(abs(t), df))
    assert (row["n_a"], row["n_b"]) == (len(a), len(b))


def test_welch_pairs_and_degenerate_cells():
    import pandas as pd

    runs = pd.DataFrame({"run_id": list("abcdef"), "status": "ok", "protocol": ["kv", "kv", "p2p", "p2p", "broadcast", "broadcast"],
                         "tokens_total": [10.0, 10.0, 10.0, 10.0, 11.0, 13.0]})
    res = welch_tests(runs, "tokens_total", "protocol", (), None)
    assert len(res) == 3  # every pair of three backends
    flat = res[(res["group_a"] == "kv") & (res["group_b"] == "p2p")].iloc[0]
    assert math.isnan(flat["p"])  # both sides constant: undefined, not an error


def test_masgrid_report_writes_every_table_and_figure(dataset, tmp_path, capsys):
    from masgrid.families.masbench.report import TABLES
    from masgrid._private.platform.commands.cli import main

    root, ok = dataset
    out = tmp_path / "report"
    assert main(["report", str(root), "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    mb = out / "masbench"  # each family's report in its own folder; the overview at the top
    assert "MAS-Bench: [masbench/README.md](masbench/README.md)" in (out / "README.md").read_text()
    for name in ["overview", *TABLES]:
        folder = out if name == "overview" else mb
        md, csv = (folder / f"{name}.md").read_text(), (folder / f"{name}.csv").read_text()
        assert "(no data)" not in md and md.count("\n|") >= 2, name
        assert len(csv.splitlines()) >= 2, name
    png = (mb / "figure2.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    index = (mb / "README.md").read_text()
    assert all(f"({name}.md)" in index for name in TABLES)
    # the CSV of Table 1 carries the same numbers as the DataFrame
    import pandas as pd

    csv1 = pd.read_csv(mb / "table1.csv")
    t1 = table1(load_results(root).runs)
    assert csv1.loc[0, "kv / SR%"] == pytest.approx(t1.iloc[0][("kv", "SR%")])
