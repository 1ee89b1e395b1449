"""MAS-Bench Table 11 (per-cell condition diagnostic, G.4) and the per-condition Figure 2,
against plain-loop means and the textbook Welch formula on random runs read back from Parquet."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from scipy import stats

from masgrid._private.analysis.load import load_results
from masgrid.families.masbench.ablation import table11
from masgrid.families.masbench.tables import scaling
from masgrid._private.platform.results.recorder import Recorder

CONDITIONS = ("base", "abl_message", "abl_submit", "camoc")


def _rows() -> list[dict]:
    rng = random.Random(17)
    rows = []
    for i in range(400):
        agents = rng.choice([1, 3, 5])
        correct = rng.randint(0, agents)
        rows.append({"run_id": f"r{i:04d}", "task": "sorting", "protocol": rng.choice(["kv", "p2p"]),
                     "model": rng.choice(["m1", "m2"]), "condition": rng.choice(CONDITIONS), "agents": agents,
                     "k": rng.choice([1, 5]), "mode": "random", "seed": i, "status": rng.choice(["ok"] * 5 + ["invalid"]),
                     "sr": correct / agents, "success": correct == agents, "rounds": rng.randint(1, 50),
                     "te": rng.random() * 10, "cr": rng.random() * 0.3})
    return rows


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("results")
    rec = Recorder(root)
    rows = _rows()
    for row in rows:
        part = {"task": row["task"], "protocol": row["protocol"]}
        rec.finish_run({k: v for k, v in row.items() if k not in part}, [], part)
    return root, load_results(root).runs, [r for r in rows if r["status"] == "ok"]


def _sd(values: list[float]) -> float:
    """Sample SD by the textbook formula (n - 1 in the denominator)."""
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _welch_p(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se2 = va / len(a) + vb / len(b)
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    return 2 * stats.t.sf(abs((ma - mb) / math.sqrt(se2)), df)


def test_table11_per_cell_and_condition(dataset):
    _, runs, ok = dataset
    t11 = table11(runs)
    assert list(t11.columns.get_level_values(0).unique()) == list(CONDITIONS)  # the paper's row order
    for model in ("m1", "m2"):
        for protocol in ("kv", "p2p"):
            cell = {c: [r for r in ok if (r["model"], r["protocol"], r["condition"]) == (model, protocol, c)]
                    for c in CONDITIONS}
            for c, mine in cell.items():
                row = t11.loc[(model, protocol), c]
                assert row["SR%"] == pytest.approx(100 * sum(r["sr"] for r in mine) / len(mine))
                assert row["success%"] == pytest.approx(100 * sum(r["success"] for r in mine) / len(mine))
                assert row["runs"] == len(mine)
                assert row["SR% sd"] == pytest.approx(100 * _sd([r["sr"] for r in mine]))
                assert row["success% sd"] == pytest.approx(100 * _sd([float(r["success"]) for r in mine]))
                if c == "base":
                    assert math.isnan(row["p_vs_base"])
                else:
                    expected = _welch_p([r["sr"] for r in cell["base"]], [r["sr"] for r in mine])
                    assert row["p_vs_base"] == pytest.approx(expected)


@pytest.mark.parametrize("condition", ["base", "camoc", None])
def test_figure2_data_describes_one_condition(dataset, condition):
    _, runs, ok = dataset
    data = scaling(runs, condition=condition)
    chosen = [r for r in ok if condition is None or r["condition"] == condition]
    for (model, n), row in data.iterrows():
        mine = [r for r in chosen if (r["model"], r["agents"]) == (model, n)]
        assert row["SR%"] == pytest.approx(100 * sum(r["sr"] for r in mine) / len(mine))
        assert row["R"] == pytest.approx(sum(r["rounds"] for r in mine) / len(mine))
        assert row["runs"] == len(mine)


def test_report_tables_2_3_8_and_figure_follow_the_condition_flag(dataset, tmp_path: Path):
    import pandas as pd

    from masgrid._private.analysis.report import build_report
    from masgrid.families.masbench.tables import table2

    root, runs, _ = dataset
    out = tmp_path / "report" / "masbench"
    build_report(root, tmp_path / "report", condition="camoc")
    assert "condition camoc" in (out / "table2.md").read_text().splitlines()[0]
    csv = pd.read_csv(out / "table2.csv")
    expected = table2(runs, condition="camoc")
    assert csv.loc[0, "kv / 1 / SR%"] == pytest.approx(expected.iloc[0][("kv", 1, "SR%")])
    assert "condition camoc" in (out / "README.md").read_text()
    assert (out / "figure2.png").read_bytes().startswith(b"\x89PNG")
