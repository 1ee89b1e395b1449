"""SIMAS tables against computations written here from the paper's definitions, on random
runs; and the report end to end on a real scripted sweep."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.simas import analysis as simas
from masgrid.families.simas.report import write_report


def fake_runs(rng: random.Random, ns=(1, 2, 3, 4), seeds=3, questions=5, conditions=("base",)) -> pd.DataFrame:
    rows = []
    for model in ("m1", "m2"):
        for condition in conditions:
            for n in ns:
                p = rng.random()
                for seed in range(seeds):
                    for q in range(questions):
                        rows.append({"task": "simas/mmlu", "subject": "formal_logic", "model": model,
                                     "condition": condition, "discussion_rounds": 3, "agents": n, "seed": seed,
                                     "question_id": f"q{q}", "accuracy": float(rng.random() < p),
                                     "tokens_total": rng.randint(100, 5000), "answer_unparsable": False,
                                     "status": rng.choice(["ok"] * 9 + ["invalid"])})
    return pd.DataFrame(rows)


def by_hand(runs: pd.DataFrame) -> dict[tuple, tuple[float, float]]:
    """(model, condition, n) -> (mean %, population std %) of per-seed accuracies, plain Python."""
    cells: dict[tuple, dict[int, list[float]]] = {}
    for r in runs[runs["status"] == "ok"].itertuples():
        cells.setdefault((r.model, r.condition, r.agents), {}).setdefault(r.seed, []).append(r.accuracy)
    out = {}
    for key, per_seed in cells.items():
        accs = [sum(v) / len(v) for v in per_seed.values()]
        mean = sum(accs) / len(accs)
        std = math.sqrt(sum((a - mean) ** 2 for a in accs) / len(accs))
        out[key] = (100 * mean, 100 * std)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_accuracy_and_optimum_match_hand_computation(seed: int) -> None:
    rng = random.Random(seed)
    runs = fake_runs(rng)
    table = simas.accuracy_table(runs).reset_index()
    expected = by_hand(runs)
    assert len(table) == len(expected)
    for r in table.itertuples():
        mean, std = expected[(r.model, r.condition, r.agents)]
        assert r.accuracy == pytest.approx(mean) and r.std == pytest.approx(std)
    for r in simas.optimum(runs).itertuples():
        accs = {n: expected[(r.model, r.condition, n)][0] for (m, c, n) in expected if m == r.model and c == r.condition}
        best = max(accs.values())
        assert r.n_star == min(n for n, a in accs.items() if a == best)
        assert r.sufficiently_driven == (sum(1 for n, a in accs.items() if n >= 2 and a >= accs[1]) >= 2)


def test_paper_std_is_population_std() -> None:
    """Three 17-question repeats at 0, 2 and 4 correct give the paper's 9.61% (ddof 0)."""
    rows = [{"task": "simas/mmlu", "subject": "s", "model": "m", "condition": "base", "discussion_rounds": 3,
             "agents": 2, "seed": seed, "question_id": f"q{q}", "accuracy": float(q < correct),
             "tokens_total": 1, "answer_unparsable": False, "status": "ok"}
            for seed, correct in enumerate((0, 2, 4)) for q in range(17)]
    table = simas.accuracy_table(pd.DataFrame(rows))
    assert table["std"].iloc[0] == pytest.approx(9.61, abs=0.01)


def test_definition4_undefined_without_n1() -> None:
    runs = fake_runs(random.Random(1), ns=(2, 3))
    assert simas.optimum(runs)["sufficiently_driven"].isna().all()


@pytest.mark.parametrize(("diff", "symbol"), [(0.0, "→"), (1.99, "→"), (-1.5, "→"), (2.57, "↑"), (-4.17, "↓"),
                                              (5.01, "↑↑"), (-13.73, "↓↓"), (float("nan"), "")])
def test_table4_arrows(diff: float, symbol: str) -> None:
    assert simas.arrow(diff) == symbol


def test_ablation_table_differences() -> None:
    rng = random.Random(3)
    runs = fake_runs(rng, ns=(2, 4, 6, 8), conditions=("base", "no_belief", "no_personality"))
    table = simas.ablation_table(runs)
    expected = by_hand(runs)
    assert len(table) == 2
    for r in table.to_dict("records"):
        diffs = [expected[(r["model"], "base", n)][0] - expected[(r["model"], "no_belief", n)][0] for n in (2, 4, 6, 8)]
        value, symbol = r["acc Belief"].split()
        assert float(value) == pytest.approx(sum(diffs) / 4, abs=0.006) and symbol == simas.arrow(float(value))
        assert r["n Belief"] == 4 and r["n Expertise"] == 0 and r["acc Expertise"] == ""


def test_report_on_a_scripted_sweep(tmp_path: Path) -> None:
    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_local

    for n in (1, 2, 3):
        for q in range(3):
            for seed in range(2):
                cfg = RunConfig.from_mapping({"results_dir": str(tmp_path / "res"), "task": "simas/mmlu",
                                              "protocol": "groupchat", "agents": n, "seed": seed,
                                              "simas": {"subject": "abstract_algebra", "question": q, "rounds": 1,
                                                        "profiles": "pool"},
                                              "execution": {"executor": "local"}})
                assert run_local(cfg).status == "ok"
    cot = RunConfig.from_mapping({"results_dir": str(tmp_path / "res"), "task": "simas/mmlu", "protocol": "groupchat",
                                  "agents": 1, "condition": "cot", "simas": {"subject": "abstract_algebra"},
                                  "execution": {"executor": "local"}})
    assert run_local(cot).status == "ok"
    files = write_report(tmp_path / "res", tmp_path / "out")
    names = {p.name for p in files}
    assert {"README.md", "accuracy.csv", "optimum.csv", "table4.csv", "cot.csv", "inverted_u.png"} <= names
    accuracy = pd.read_csv(tmp_path / "out" / "accuracy.csv")
    assert set(accuracy["agents"]) == {1, 2, 3} and (accuracy.loc[accuracy["condition"] == "base", "repeats"] == 2).all()
    assert "19 of 19 runs used" in (tmp_path / "out" / "README.md").read_text()
