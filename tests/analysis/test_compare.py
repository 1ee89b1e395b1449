"""`masgrid report A B`: each shared setting's metrics side by side, the difference and
Welch's test computed here from its formula on random data, Holm over all tests; two real
results directories end to end through the command line."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from scipy import stats as scipy_stats

from masgrid._private.analysis.compare import compare
from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local


def _welch_p(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se2 = va / len(a) + vb / len(b)
    t = (mb - ma) / math.sqrt(se2)
    dof = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    return 2 * scipy_stats.t.sf(abs(t), dof)


def _side(rng: random.Random, shift: float, name: str) -> pd.DataFrame:
    rows = []
    for protocol in ("kv", "p2p"):
        for i in range(rng.randint(2, 6)):
            rows.append({"run_id": f"{name}{protocol}{i}", "status": rng.choice(["ok", "degraded"]), "task": "sorting",
                         "model": "m", "protocol": protocol, "condition": "base", "agents": 4, "k": 2,
                         "sr": min(1.0, rng.random() + shift), "success": rng.random() < 0.5,
                         "rounds": rng.randint(3, 9), "tokens_total": rng.randint(100, 900)})
    rows.append({**rows[0], "run_id": f"{name}-invalid", "status": "invalid", "sr": 42.0})  # never used
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(20))
def test_differences_and_p_values_match_the_formulas(seed):
    rng = random.Random(seed)
    a, b = _side(rng, 0.0, "a"), _side(rng, 0.2, "b")
    table, notes = compare(a, b)
    assert not notes and len(table) == 2 * 4
    for row in table.itertuples():
        va = a[(a["protocol"] == row.protocol) & (a["status"] != "invalid")][row.metric].astype(float).tolist()
        vb = b[(b["protocol"] == row.protocol) & (b["status"] != "invalid")][row.metric].astype(float).tolist()
        assert (row.n_a, row.n_b) == (len(va), len(vb))
        assert row.diff == pytest.approx(sum(vb) / len(vb) - sum(va) / len(va))
        if len(set(va)) > 1 or len(set(vb)) > 1:
            assert row.p == pytest.approx(_welch_p(va, vb))
    assert (table["p_holm"].dropna() >= table["p"].dropna() - 1e-12).all()


def test_a_setting_only_one_side_has_is_named_not_compared():
    rng = random.Random(0)
    a, b = _side(rng, 0, "a"), _side(rng, 0, "b")
    b.loc[b["protocol"] == "kv", "agents"] = 8
    table, notes = compare(a, b)
    assert set(table["protocol"]) == {"p2p"}
    assert notes == ["MAS-Bench: 1 cells only in A, 1 only in B (not compared)"]


def test_report_a_b_on_two_results_directories(tmp_path, capsys):
    for side, seeds in (("a", (0, 1)), ("b", (2, 3))):
        for seed in seeds:
            cfg = RunConfig.from_mapping(dict(results_dir=str(tmp_path / side), task="sorting", protocol="kv", agents=2,
                                              k=2, seed=seed, execution={"executor": "local"}))
            assert run_local(cfg).status == "ok"
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp")]) == 0
    table = pd.read_csv(tmp_path / "cmp" / "compare.csv")
    assert set(table["metric"]) == {"sr", "success", "rounds", "tokens_total"}
    assert (table["n_a"] == 2).all() and (table["n_b"] == 2).all()
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "p_holm" in text and "diff = mean_B - mean_A" in text
    assert main(["report", "nope-a", "nope-b", "--results", str(tmp_path / "a")]) == 2
    assert "no experiment 'nope-a'" in capsys.readouterr().err
