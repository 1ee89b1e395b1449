"""n*, Definition 4 and Table 4 against computations written here in integers (issue 25,
items 3 and 4): equal accuracies reached by different repeats tie exactly, and Table 4 never
averages runs of different discussion lengths T or settings into one difference."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest

from masgrid.families.simas import analysis as simas


def run(n: int, seed: int, q: int, correct: bool, **over: object) -> dict:
    row = {"task": "simas/mmlu", "subject": "college_physics", "model": "m", "condition": "base",
           "discussion_rounds": 3, "agents": n, "seed": seed, "question_id": f"q{q}", "accuracy": float(correct),
           "tokens_total": 100, "answer_unparsable": False, "status": "ok"}
    row.update(over)
    return row


def repeats(n: int, corrects: tuple[int, ...], questions: int = 17, **over: object) -> list[dict]:
    """One run per question and repeat: repeat r gets `corrects[r]` of `questions` right."""
    return [run(n, seed, q, q < c, **over) for seed, c in enumerate(corrects) for q in range(questions)]


def test_equal_accuracies_tie_exactly() -> None:
    """(1,1,1)/17 and (0,0,3)/17 are the same accuracy; as float means they differ in the
    last bit, which made n = 2 lose the tie and n = 1 look better than n = 2."""
    assert sum([1 / 17] * 3) / 3 != sum([0, 0, 3 / 17]) / 3  # the float trap this guards against
    runs = pd.DataFrame(repeats(1, (0, 0, 3)) + repeats(2, (1, 1, 1)) + repeats(3, (1, 1, 1)) + repeats(4, (0, 1, 1)))
    row = simas.optimum(runs).iloc[0]
    assert row["n_star"] == 1  # n = 1, 2, 3 tie at 3/51: the smallest wins
    assert bool(row["sufficiently_driven"]) is True  # n = 2 and n = 3 reach A(1) exactly
    assert row["accuracy_at_n_star"] == pytest.approx(100 * 3 / 51)
    # the other order: n = 1 at (1,1,1), n = 2 at (0,0,3), n = 3 at (3,0,0)
    runs = pd.DataFrame(repeats(1, (1, 1, 1)) + repeats(2, (0, 0, 3)) + repeats(3, (3, 0, 0)))
    row = simas.optimum(runs).iloc[0]
    assert (row["n_star"], bool(row["sufficiently_driven"])) == (1, True)


def by_integers(rows: list[dict]) -> dict[tuple, tuple[int, object]]:
    """Per (model, condition): n* and Definition 4 in integer arithmetic, written apart from
    masgrid. A cell's accuracy is mean_r(c_r / q_r) = sum_r(c_r * L / q_r) / (R * L), L the
    lcm of the q_r; two cells compare by cross-multiplying numerators and denominators."""
    cells: dict[tuple, dict[int, dict[int, list[int]]]] = {}
    for r in rows:
        if r["status"] != "ok":
            continue
        counts = cells.setdefault((r["model"], r["condition"]), {}).setdefault(r["agents"], {}).setdefault(r["seed"], [0, 0])
        counts[0] += int(r["accuracy"])
        counts[1] += 1
    out = {}
    for key, by_n in cells.items():
        value = {}
        for n, per_seed in by_n.items():
            lcm = math.lcm(*(q for _, q in per_seed.values()))
            value[n] = (sum(c * (lcm // q) for c, q in per_seed.values()), len(per_seed) * lcm)

        def ge(a: tuple[int, int], b: tuple[int, int]) -> bool:
            return a[0] * b[1] >= b[0] * a[1]

        best = [n for n in value if all(ge(value[n], value[m]) for m in value)]
        driven = None if 1 not in value else sum(1 for n in value if n >= 2 and ge(value[n], value[1])) >= 2
        out[key] = (min(best), driven)
    return out


@pytest.mark.parametrize("seed", range(300))
def test_optimum_matches_integer_computation(seed: int) -> None:
    """Random cells built to tie often: a cell's total of correct answers is small and spread
    over its repeats at random, so equal accuracies come from different repeats; now and
    then a run is marked invalid and left out, so repeats answer different numbers of
    questions."""
    rng = random.Random(seed)
    questions, n_repeats = rng.choice([(17, 3), (17, 3), (6, 3), (4, 2), (17, 1)])
    rows = []
    for model in ("m1", "m2"):
        for condition in ("base", "no_belief"):
            for n in rng.sample(range(1, 9), rng.randint(2, 6)):
                per_repeat = [0] * n_repeats
                for _ in range(rng.randint(0, 4)):
                    r = rng.randrange(n_repeats)
                    per_repeat[r] = min(questions, per_repeat[r] + 1)
                for s, correct in enumerate(per_repeat):
                    for q in range(questions):
                        rows.append(run(n, s, q, q < correct, model=model, condition=condition,
                                        status="invalid" if rng.random() < 0.02 else "ok"))
    expected = by_integers(rows)
    got = {(r["model"], r["condition"]): (r["n_star"], r["sufficiently_driven"])
           for r in simas.optimum(pd.DataFrame(rows)).to_dict("records")}
    got = {k: (n, None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v))
           for k, (n, v) in got.items()}
    assert got == expected


def test_table4_keeps_discussion_lengths_apart() -> None:
    """At T = 3 ALL beats no_belief by 1 of 17 questions (+5.88 points), at T = 1 by 17 of 17
    (+100): two rows, never one +52.94."""
    rows = []
    for n in (2, 4, 6, 8):
        rows += repeats(n, (2,), discussion_rounds=3) + repeats(n, (1,), discussion_rounds=3, condition="no_belief")
        rows += repeats(n, (17,), discussion_rounds=1) + repeats(n, (0,), discussion_rounds=1, condition="no_belief")
    table = simas.ablation_table(pd.DataFrame(rows))
    assert len(table) == 2
    by_t = {r["discussion_rounds"]: r for r in table.to_dict("records")}
    assert by_t[3]["acc Belief"] == f"{100 / 17:+.2f} ↑↑"
    assert by_t[1]["acc Belief"] == "+100.00 ↑↑"
    assert by_t[1]["n Belief"] == by_t[3]["n Belief"] == 4


def test_settings_split_cells_and_table4() -> None:
    """Runs that differ in sampling or in a simas option (not the question index) are
    different cells; options shared by every run add nothing to the label."""
    def cfg(profiles: str, question: int) -> str:
        return json.dumps({"simas": {"profiles": profiles, "question": question, "rounds": 3}})

    rows = []
    for n in (1, 2):
        for q in range(4):
            for temperature, profiles in ((0.0, "generate"), (0.7, "generate"), (0.0, "pool")):
                for condition in ("base", "no_belief"):
                    rows.append(run(n, 0, q, q < (n + (condition == "base") + (temperature > 0)), condition=condition,
                                    temperature=temperature, config_json=cfg(profiles, q), top_p=None))
    runs = pd.DataFrame(rows)
    table = simas.accuracy_table(runs).reset_index()
    assert sorted(set(table["setting"])) == [
        "temperature=0.0; simas.profiles=generate", "temperature=0.0; simas.profiles=pool",
        "temperature=0.7; simas.profiles=generate"]
    assert len(table) == 3 * 2 * 2  # settings x conditions x n
    hot = table[(table["setting"].str.startswith("temperature=0.7")) & (table["condition"] == "no_belief")]
    assert list(hot.sort_values("agents")["accuracy"]) == [50.0, 75.0]  # 2 and 3 of 4 questions
    assert len(simas.optimum(runs)) == 3 * 2
    table4 = simas.ablation_table(runs, ns=(1, 2))
    assert len(table4) == 3 and set(table4["acc Belief"]) == {"+25.00 ↑↑"}
    # one setting for all runs: an empty label, and the cell is the same as without config_json
    same = runs[runs["temperature"] == 0.0]
    same = same[same["config_json"].str.contains('"generate"')]
    assert set(simas.accuracy_table(same).reset_index()["setting"]) == {""}


def test_cot_comparison_keeps_t_and_settings_apart() -> None:
    """SIMAS rows per T and setting; the one CoT cell of the subject sits beside each. Options
    that do not apply to CoT (profiles, answer_from) neither label nor split the CoT run."""
    def cfg(**simas_options: object) -> str:
        return json.dumps({"simas": {"question": 0, **simas_options}})

    rows = []
    for q in range(4):
        for rounds in (1, 3):
            for who in ("first", "last"):
                for n in (1, 2):
                    correct = q < (1 if who == "first" else 3) + (rounds == 3)
                    rows.append(run(n, 0, q, correct, discussion_rounds=rounds,
                                    config_json=cfg(profiles="pool", answer_from=who, rounds=rounds)))
        rows.append(run(1, 0, q, q < 2, condition="cot", config_json=cfg(profiles="generate", rounds=3)))
    runs = pd.DataFrame(rows)
    assert set(simas.settings_of(runs)) == {"simas.answer_from=first", "simas.answer_from=last", ""}
    table = simas.cot_comparison(runs).reset_index()
    assert len(table) == 4 and set(table["CoT"]) == {50.0}
    got = {(r["discussion_rounds"], r["setting"]): r["SIMAS n=2"] for r in table.to_dict("records")}
    assert got == {(1, "simas.answer_from=first"): 25.0, (3, "simas.answer_from=first"): 50.0,
                   (1, "simas.answer_from=last"): 75.0, (3, "simas.answer_from=last"): 100.0}


def test_figure_points_keep_discussion_lengths_apart() -> None:
    from masgrid.families.simas import figures as simas_figures

    rows = []
    for n in (1, 2):
        rows += repeats(n, (17,), discussion_rounds=1) + repeats(n, (0,), discussion_rounds=3)
    points = simas_figures.tokens_points(pd.DataFrame(rows))
    got = {(r["discussion_rounds"], r["agents"]): r["accuracy"] for r in points.to_dict("records")}
    assert got == {(1, 1): 100.0, (1, 2): 100.0, (3, 1): 0.0, (3, 2): 0.0}  # never 50 from pooling
