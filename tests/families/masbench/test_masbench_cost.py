"""MAS-Bench Table 4 (tokens, communication share, cost) against sums written here with plain
loops on random runs read back from real Parquet, and against the paper's own Table 4
arithmetic with the prices our model presets carry."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest
import yaml

from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.analysis.load import load_results
from masgrid.families.masbench.cost import table4
from masgrid._private.platform.results.recorder import Recorder

CONF = Path(__file__).resolve().parents[3] / "masgrid" / "families" / "masbench" / "conf" / "model"
PRICES = {"model-a": (0.15, 0.75), "model-b": (0.02, 0.10), "model-c": None}  # model-c: preset without a price


def _config_json(price: tuple[float, float] | None) -> str:
    model = {"name": "x"} | ({"price": {"input_usd_per_mtok": price[0], "output_usd_per_mtok": price[1]}}
                             if price else {})
    return json.dumps({"model": model})


def _random_runs(n: int = 240) -> list[dict]:
    rng = random.Random(5)
    rows = []
    for i in range(n):
        model = rng.choice(list(PRICES))
        t_in, t_out = rng.randint(1_000, 900_000), rng.randint(100, 90_000)
        rows.append({"run_id": f"r{i:04d}", "task": rng.choice(["sorting", "max"]), "protocol": rng.choice(["kv", "p2p"]),
                     "model": model, "condition": rng.choice(["base", "camoc"]), "agents": 3, "k": 2, "seed": i,
                     "status": rng.choice(["ok", "ok", "ok", "degraded", "invalid", "failed"]),
                     "tokens_in": t_in, "tokens_out": t_out, "tokens_total": t_in + t_out,
                     "tokens_comm": rng.randint(0, t_in // 10), "calls_usage_estimated": rng.choice([0, 0, 0, 2]),
                     "config_json": _config_json(PRICES[model])})
    return rows


def _write(root: Path, rows: list[dict]) -> pd.DataFrame:
    rec = Recorder(root)
    for row in rows:
        part = {"task": row["task"], "protocol": row["protocol"]}
        rec.finish_run({k: v for k, v in row.items() if k not in part}, [], part)
    return load_results(root).runs


def test_table4_against_loops_on_random_runs(tmp_path):
    rows = _random_runs()
    t4 = table4(_write(tmp_path, rows))
    used = [r for r in rows if r["status"] in ("ok", "degraded")]
    for model, price in PRICES.items():
        mine = [r for r in used if r["model"] == model]
        total = sum(r["tokens_total"] for r in mine)
        comm = sum(r["tokens_comm"] for r in mine)
        row = t4.loc[model]
        assert row["runs"] == len(mine)
        assert row["total_mtok"] == pytest.approx(total / 1e6)
        assert row["comm_mtok"] == pytest.approx(comm / 1e6)
        assert row["comm_pct"] == pytest.approx(100 * comm / total)
        assert row["tokens_per_run"] == pytest.approx(total / len(mine))
        mean = total / len(mine)
        sd = math.sqrt(sum((r["tokens_total"] - mean) ** 2 for r in mine) / (len(mine) - 1))
        assert row["tokens_per_run sd"] == pytest.approx(sd)
        assert row["usage_estimated_calls"] == sum(r["calls_usage_estimated"] for r in mine)
        if price is None:
            assert all(math.isnan(row[c]) for c in ("cost_usd", "cost_mid_usd", "cost_low_usd", "cost_high_usd"))
            assert f"no price for {len(mine)} of {len(mine)} runs" in row["note"]
            continue
        p_in, p_out = price
        exact = sum(r["tokens_in"] * p_in + r["tokens_out"] * p_out for r in mine) / 1e6
        assert row["cost_usd"] == pytest.approx(exact)
        assert row["cost_low_usd"] == pytest.approx(total * p_in / 1e6)
        assert row["cost_high_usd"] == pytest.approx(total * p_out / 1e6)
        assert row["cost_mid_usd"] == pytest.approx(total * (p_in + p_out) / 2 / 1e6)
    total_row = t4.loc["Total"]
    assert total_row["runs"] == len(used)
    assert total_row["total_mtok"] == pytest.approx(sum(r["tokens_total"] for r in used) / 1e6)
    assert math.isnan(total_row["cost_usd"])  # model-c has no price: the total is unknown, not understated
    assert math.isnan(total_row["tokens_per_run"])


def test_table4_by_model_and_protocol_sums_to_the_model_rows(tmp_path):
    runs = _write(tmp_path, _random_runs(120))
    by_model, by_both = table4(runs), table4(runs, ("model", "protocol"))
    for model in PRICES:
        part = by_both.loc[model]
        assert part["runs"].sum() == by_model.loc[model, "runs"]
        assert part["total_mtok"].sum() == pytest.approx(by_model.loc[model, "total_mtok"])
    assert by_both.loc[("Total", ""), "runs"] == by_model.loc["Total", "runs"]


@pytest.mark.parametrize("preset, log_count, total_mtok, comm_mtok, comm_pct, tok_per_log, mid, low, high", [
    ("deepseek_v31", 1050, 104.373, 4.486, 4.30, 99_403, 46.97, 15.66, 78.28),
    ("qwen3_next_80b", 1050, 63.738, 2.625, 4.12, 60_703, 21.03, 3.82, 38.24),
    ("gpt_oss_120b", 1050, 43.660, 4.098, 9.39, 41_580, 2.62, 0.87, 4.37),
])
def test_preset_prices_reproduce_the_papers_table4(preset, log_count, total_mtok, comm_mtok, comm_pct, tok_per_log,
                                                   mid, low, high):
    """The paper's token totals with our presets' prices give the paper's cost columns."""
    settings = BackendSettings.model_validate(yaml.safe_load((CONF / f"{preset}.yaml").read_text()))
    assert settings.price is not None
    config = json.dumps({"model": settings.model_dump(mode="json")})
    total, comm = round(total_mtok * 1e6), round(comm_mtok * 1e6)
    sizes = [total // log_count + (i < total % log_count) for i in range(log_count)]
    comms = [comm // log_count + (i < comm % log_count) for i in range(log_count)]
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(log_count)], "status": "ok", "model": preset,
                         "tokens_total": sizes, "tokens_in": sizes, "tokens_out": 0, "tokens_comm": comms,
                         "config_json": config})
    row = table4(runs).loc[preset]
    assert row["runs"] == log_count
    assert round(row["total_mtok"], 3) == total_mtok and round(row["comm_mtok"], 3) == comm_mtok
    # the paper's totals are rounded to 1,000 tokens: Tok/log is known to within one token
    assert round(row["comm_pct"], 2) == comm_pct and abs(row["tokens_per_run"] - tok_per_log) <= 1
    assert (round(row["cost_mid_usd"], 2), round(row["cost_low_usd"], 2), round(row["cost_high_usd"], 2)) == (mid, low, high)


def test_unreadable_or_missing_config_is_unpriced_not_an_error():
    runs = pd.DataFrame({"run_id": ["a", "b"], "status": "ok", "model": "m", "tokens_total": [10, 20],
                         "tokens_in": [5, 10], "tokens_out": [5, 10], "tokens_comm": [1, 2],
                         "config_json": ["{not json", None]})
    row = table4(runs).loc["m"]
    assert math.isnan(row["cost_usd"]) and "no price for 2 of 2 runs" in row["note"]


def test_a_missing_token_count_makes_the_sum_unknown_not_smaller():
    runs = pd.DataFrame({"run_id": ["a", "b"], "status": "ok", "model": "m", "tokens_total": [10, 20],
                         "tokens_in": [5, 10], "tokens_out": [5, 10], "tokens_comm": [1.0, None],
                         "config_json": _config_json((1.0, 2.0))})
    row = table4(runs).loc["m"]
    assert math.isnan(row["comm_mtok"]) and math.isnan(row["comm_pct"])
    assert row["total_mtok"] == pytest.approx(30 / 1e6) and row["cost_usd"] == pytest.approx(45 / 1e6)
    assert "token counts missing for 1 runs" in row["note"]


def test_empty_results_give_an_empty_table():
    assert table4(pd.DataFrame()).empty
