"""CooperBench tables (families/cooper/analysis.py) against computations written here from the paper:
the closed-form Wilson interval, Newcombe's difference interval built on it, and counts made
with plain loops over random frames (missing cells, failed and unscored runs included)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from masgrid.families.cooper import analysis as cooper
from tests.families.cooper.cooper_frames import random_runs, scored

Z = 1.959963984540054  # the 0.975 quantile of the standard normal


def wilson_closed_form(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def _count(frame: pd.DataFrame, model: str, setting: str) -> tuple[int, int]:
    k = n = 0
    for row in frame.itertuples():
        if row.model == model and row.cooper_setting == setting:
            n += 1
            k += bool(row.success)
    return k, n


@pytest.mark.parametrize("seed", range(12))
def test_success_by_setting_and_gap_count_every_cell_and_flag_missing_ones(seed):
    rng = np.random.default_rng(seed)
    runs = random_runs(rng, models=int(rng.integers(1, 4)), tasks=int(rng.integers(2, 9)), drop=0.2)
    # knock out one whole (model, setting) cell: the tables must show it, flagged, not drop it
    gone = runs["model"].iloc[0]
    runs = runs[~((runs["model"] == gone) & (runs["cooper_setting"] == "coop"))]
    table = cooper.success_by_setting(runs)
    ref = scored(runs)
    models = sorted(runs["model"].unique())
    settings = {"solo", "coop"} | set(runs["cooper_setting"])
    assert len(table) == len(models) * len(settings)  # every model x every setting, present or not
    for row in table.itertuples():
        k, n = _count(ref, row.model, row.setting)
        assert (row.k, row.n) == (k, n)
        if n:
            assert row.rate == pytest.approx(k / n)
            assert (row.ci_low, row.ci_high) == pytest.approx(wilson_closed_form(k, n), abs=1e-9)
        else:
            assert math.isnan(row.rate) and "no scored" in row.flag
        unscored = int(((runs["status"] == "ok") & runs["success"].isna() & (runs["model"] == row.model)
                        & (runs["cooper_setting"] == row.setting)).sum())
        assert row.unscored == unscored and ((unscored > 0) == ("unscored" in row.flag))
    gap = cooper.gap(runs).set_index("model")
    assert "no scored coop runs" in gap.loc[gone, "flag"] and math.isnan(gap.loc[gone, "gap"])
    for model in models:
        (ks, ns), (kc, nc) = _count(ref, model, "solo"), _count(ref, model, "coop")
        if ns and nc:
            assert gap.loc[model, "gap"] == pytest.approx(ks / ns - kc / nc)
            if ks:
                assert gap.loc[model, "relative_loss"] == pytest.approx(1 - (kc / nc) / (ks / ns))


@pytest.mark.parametrize("seed", range(12))
def test_merge_table_is_cumulative_success_by_stage(seed):
    rng = np.random.default_rng(100 + seed)
    runs = random_runs(rng, models=2, tasks=int(rng.integers(3, 10)))
    table = cooper.merge_table(runs)
    ref = scored(runs)
    order = {"naive": 0, "union": 1, "llm": 2}
    for _, row in table.iterrows():
        cell = [r for r in ref.itertuples() if r.model == row["model"] and r.cooper_setting == row["setting"]]
        n = len(cell)
        assert row["n"] == n
        if not n:
            assert row["flag"].startswith("no scored")
            continue
        for col, upto in (("naive%", 0), ("union%", 1), ("llm%", 2)):
            expect = 100 * sum(1 for r in cell if r.success and order.get(r.merge_stage, 9) <= upto) / n
            assert row[col] == pytest.approx(expect)
        assert row["never_merged%"] == pytest.approx(100 * sum(r.merge_stage == "failed" for r in cell) / n)
        assert row["union_gain"] == pytest.approx(row["union%"] - row["naive%"])
    effect = cooper.comm_effect(table).set_index("model")["delta_llm%"]
    wide = table.pivot(index="model", columns="setting", values="llm%")
    assert np.allclose(effect.to_numpy(), (wide["coop"] - wide["nocomm"]).to_numpy(), equal_nan=True)


def test_merge_table_flags_a_missing_resolver():
    rng = np.random.default_rng(7)
    runs = random_runs(rng, models=1, tasks=6)
    runs.loc[runs["merge_stage"] == "llm", "merge_stage"] = "union"
    table = cooper.merge_table(runs)
    assert (table["llm%"] == table["union%"]).all()
    assert table["flag"].str.contains("no run reached the LLM resolver").all()


def test_merge_table_counts_a_failed_llm_stage_as_reached_and_flags_it():
    rng = np.random.default_rng(8)
    runs = random_runs(rng, models=1, tasks=6)
    runs.loc[runs["merge_stage"] == "llm", "merge_stage"] = "union"
    runs["resolver_outcome"] = None
    coop = runs.index[(runs["cooper_setting"] == "coop") & (runs["merge_stage"] == "union")][:1]
    runs.loc[coop, "resolver_outcome"] = "failed"
    table = cooper.merge_table(runs).set_index("setting")
    assert (table["llm%"] == table["union%"]).all()  # a failed stage never counts as passed
    assert len(coop) == 1  # the random runs hold a coop union run to mark
    assert bool(table.loc["coop", "llm_ran"]) and "1 run(s) whose llm stage failed" in table.loc["coop", "flag"]
    assert "no run reached" not in table.loc["coop", "flag"]


@pytest.mark.parametrize("seed", range(10))
def test_conflict_rate_with_and_without_communication(seed):
    rng = np.random.default_rng(200 + seed)
    runs = random_runs(rng, models=2, tasks=int(rng.integers(3, 10)))
    table = cooper.conflict_rate(runs)
    ok = runs[runs["status"] == "ok"]
    for row in table.itertuples():
        cell = ok[(ok["model"] == row.model) & (ok["cooper_setting"] == row.setting)]
        merged = [c for c in cell["conflicts_naive"] if c is not None and not (isinstance(c, float) and math.isnan(c))]
        assert row.n == len(merged) and row.k == sum(1 for c in merged if c > 0)
        assert row.unmerged == len(cell) - len(merged)
        if merged:
            assert (row.ci_low, row.ci_high) == pytest.approx(wilson_closed_form(row.k, row.n), abs=1e-9)
    diff = cooper.conflict_difference(table).set_index("model")
    rates = table.pivot(index="model", columns="setting", values="rate")
    assert np.allclose(diff["difference"], rates["coop"] - rates["nocomm"], equal_nan=True)


def test_scaling_counts_coop_runs_per_team_size_and_flags_missing_sizes():
    rng = np.random.default_rng(5)
    runs = random_runs(rng, models=2, tasks=5, sizes=(2, 3, 4))
    runs = runs[~((runs["model"] == "model1") & (runs["cooper_features"].str.count(",") == 3))]
    table = cooper.scaling(runs)
    ref = scored(runs)
    ref = ref[ref["cooper_setting"] == "coop"]
    for row in table.itertuples():
        cell = ref[(ref["model"] == row.model) & (ref["cooper_features"].str.count(",") + 1 == row.agents)]
        assert (row.n, row.k) == (len(cell), int(cell["success"].astype(bool).sum()))
    missing = table[(table["model"] == "model1") & (table["agents"] == 4)].iloc[0]
    assert missing["n"] == 0 and "no scored coop runs with 4 agents" in missing["flag"]


def test_runs_of_other_families_and_missing_columns():
    rng = np.random.default_rng(3)
    runs = pd.concat([random_runs(rng, models=1, tasks=3),
                      pd.DataFrame([{"run_id": "x", "task": "max", "model": "m", "status": "ok", "success": True}])])
    assert "x" not in set(cooper.cooper_runs(runs)["run_id"])
    assert cooper.success_by_setting(runs)["model"].unique().tolist() == ["model0"]
    with pytest.raises(ValueError, match="lack the columns cooper_setting"):
        cooper.cooper_runs(runs.drop(columns="cooper_setting"))
    assert cooper.success_by_setting(pd.DataFrame()).empty


@pytest.mark.parametrize("seed", range(6))
def test_no_table_has_a_nan_without_a_flag(seed):
    from masgrid.families.cooper import difficulty as cd

    rng = np.random.default_rng(400 + seed)
    runs = random_runs(rng, models=3, tasks=int(rng.integers(2, 8)), drop=0.4, sizes=(2, 3))
    # one model never ran Solo, another never ran No-comm
    runs = runs[~((runs["model"] == "model1") & (runs["cooper_setting"] == "solo"))
                & ~((runs["model"] == "model2") & (runs["cooper_setting"] == "nocomm"))]
    curves = cd.curves(runs)
    tables = {"success": cooper.success_by_setting(runs), "gap": cooper.gap(runs),
              "comm_gap": cooper.gap(runs, "coop", "nocomm"), "merge": cooper.merge_table(runs),
              "conflicts": cooper.conflict_rate(runs), "scaling": cooper.scaling(runs),
              "difference": cooper.conflict_difference(cooper.conflict_rate(runs)), "curves": curves,
              "table4": cd.retention(curves), "gap_by_difficulty": cd.gap_by_difficulty(curves)}
    for name, table in tables.items():
        numbers = table.select_dtypes("number")
        silent = table[numbers.isna().any(axis=1) & (table["flag"] == "")]
        assert silent.empty, (name, silent)
    success = tables["success"].set_index(["model", "setting"])
    assert "no scored solo runs" in success.loc[("model1", "solo"), "flag"]
    assert "no scored nocomm runs" in success.loc[("model2", "nocomm"), "flag"]
