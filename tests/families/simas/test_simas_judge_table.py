"""The judge's win-rate table (Figures 7, 13c-d) against a hand computation on random judgments."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from masgrid.families.simas.analysis import judge_note, judge_table


def random_judgments(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(rng.randint(1, 40)):
        key = {"judge_model": rng.choice(["j1", "j2"]), "prompt_hash": "h", "model": rng.choice(["m1", "m2"]),
               "task": rng.choice(["simas/open", "simas/coding"]), "discussion_rounds": 3,
               "agents": rng.randint(1, 3), "pair_id": f"p{i}"}
        status = rng.choices(["ok", "failed", "skipped"], [6, 1, 1])[0]
        if status == "skipped":
            rows.append({**key, "order": "combined", "status": "skipped"})
            continue
        named = [rng.choice(["simas", "cot", "tie"]) if status == "ok" or rng.random() < 0.5 else None for _ in range(2)]
        scores = [(rng.randint(3, 30), rng.randint(3, 30)) for _ in range(2)]
        for order, w, (s, c) in zip(("simas_first", "cot_first"), named, scores):
            rows.append({**key, "order": order, "status": "ok" if w else "failed", "winner": w,
                         "simas_score": float(s) if w else None, "cot_score": float(c) if w else None})
        if status == "ok":
            winner = named[0] if named[0] == named[1] else "tie"
            rows.append({**key, "order": "combined", "status": "ok", "winner": winner,
                         "simas_score": (scores[0][0] + scores[1][0]) / 2, "cot_score": (scores[0][1] + scores[1][1]) / 2})
        else:
            rows.append({**key, "order": "combined", "status": "failed"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(30))
def test_win_rates_match_hand_computation(seed: int) -> None:
    j = random_judgments(seed)
    table = judge_table(j)
    by: dict[tuple, list[dict]] = defaultdict(list)
    orders: dict[str, list] = defaultdict(list)
    for r in j.to_dict("records"):
        if r["order"] == "combined":
            by[(r["judge_model"], r["prompt_hash"], r["model"], r["task"], 3, r["agents"])].append(r)
        else:
            orders[r["pair_id"]].append(r["winner"])
    assert len(table) == len(by)
    for key, rs in by.items():
        got = table.loc[key]
        ok = [r for r in rs if r["status"] == "ok"]
        assert got["pairs"] == len(rs) and got["judged"] == len(ok)
        assert got["judge_failures"] == sum(r["status"] == "failed" for r in rs)
        assert got["skipped"] == sum(r["status"] == "skipped" for r in rs)
        wins = sum(r["winner"] == "simas" for r in ok)
        losses = sum(r["winner"] == "cot" for r in ok)
        assert (got["simas_wins"], got["cot_wins"], got["ties"]) == (wins, losses, len(ok) - wins - losses)
        split = sum(1 for r in ok if len(set(orders[r["pair_id"]])) == 2)
        assert got["order_disagreements"] == split
        if ok:
            assert got["simas_win_rate"] == pytest.approx(100 * wins / len(ok))
            assert got["cot_win_rate"] == pytest.approx(100 * losses / len(ok))
            assert got["simas_score"] == pytest.approx(sum(r["simas_score"] for r in ok) / len(ok))
        else:
            assert np.isnan(got["simas_win_rate"]) and np.isnan(got["simas_score"])


def test_note_and_empty() -> None:
    assert judge_table(pd.DataFrame()).empty
    assert "No judgments" in judge_note(pd.DataFrame())
    j = random_judgments(3)
    c = j[j["order"] == "combined"]
    assert f"{(c['status'] == 'failed').sum()} judge failures" in judge_note(j)
