"""The judged rates of Figure 5 against a computation written here from the definitions: on
random verdict sets (several judges, prompt versions, models; ok, invalid, failed and skipped
rows; runs the report does not use), each group's k and n and a Wilson interval computed by
its closed form."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from masgrid.families.cooper.comm_rates import judged_rates
from tests.families.cooper.cooper_frames import random_runs

#: the taxonomy's grouping, restated from appendix J (C1x/C2: unresponsive, C3x: false claims, C4x: repeats)
GROUP_OF = {"C1a": "unresponsiveness", "C1b": "unresponsiveness", "C2": "unresponsiveness",
            "C3a": "hallucination", "C3b": "hallucination", "C4a": "repetition", "C4b": "repetition"}


def wilson_closed_form(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def random_judgments(rng: np.random.Generator, runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    ids = list(runs["run_id"]) + [f"ghost-{i}" for i in range(5)]  # judged runs the report does not use
    models = dict(zip(runs["run_id"], runs["model"]))
    for judge in ("judge-x", "judge-y"):
        for prompt in ("p1", "p2"):
            for run_id in ids:
                if rng.random() < 0.3:
                    continue
                status = str(rng.choice(["ok", "ok", "ok", "invalid", "failed", "skipped"]))
                category = str(rng.choice([*GROUP_OF, None, None])) if status == "ok" else None
                category = None if category == "None" else category
                rows.append({"run_id": run_id, "model": models.get(run_id, "model0"), "judge_model": judge,
                             "prompt_version": prompt, "status": status, "category": category,
                             "group": GROUP_OF.get(category) if category else None})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(6))
def test_rates_match_an_independent_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, models=3, tasks=10, repeats=2)
    judgments = random_judgments(rng, runs)
    got = judged_rates(runs, judgments)
    used = set(runs.loc[(runs["status"] == "ok") & (runs["cooper_setting"] == "coop"), "run_id"])
    expected = 0
    for (judge, prompt, model), part in judgments[judgments["run_id"].isin(used)].groupby(
            ["judge_model", "prompt_version", "model"]):
        valid = [r for r in part.astype(object).where(part.notna(), None).to_dict("records") if r["status"] == "ok"]
        for group in ("unresponsiveness", "hallucination", "repetition", "any"):
            k = sum(1 for r in valid if r["category"] and (group == "any" or GROUP_OF[r["category"]] == group))
            row = got[(got.judge_model == judge) & (got.prompt_version == prompt) & (got.model == model)
                      & (got.group == group)]
            assert len(row) == 1
            row = row.iloc[0]
            assert (row.n, row.detected) == (len(valid), k)
            assert (row.invalid, row.failed, row.no_messages) == tuple(
                int((part["status"] == s).sum()) for s in ("invalid", "failed", "skipped"))
            if valid:
                low, high = wilson_closed_form(k, len(valid))
                assert row.rate == pytest.approx(k / len(valid))
                assert row.ci_low == pytest.approx(low, abs=1e-9) and row.ci_high == pytest.approx(high, abs=1e-9)
            else:
                assert math.isnan(row.rate)
            expected += 1
    assert len(got) == expected > 0


def test_no_judgments_gives_no_rates() -> None:
    runs = random_runs(np.random.default_rng(0))
    assert judged_rates(runs, pd.DataFrame()).empty
