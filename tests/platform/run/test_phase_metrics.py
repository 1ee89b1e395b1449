"""Per-phase run metrics (platform/run/phase_metrics.py) against hand computation.

Real runs through the driver, protocols, recorder and Parquet: a loopback model scripted
per agent and phase (tests/support/two_phase.py) and the classical scripted policy. The
expected values come from the plan, from the requests the server answered (its own word
counts are the usage it reported) and from the recorded events, summed here in plain
Python; none comes from the columns under test.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import pandas as pd
import pytest

from masgrid._private.envs.tasks.base import Score
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local, run_one
from masgrid._private.platform.run.phase_metrics import PhaseUsage, phase_columns
from tests.support.chat_server import ChatServer
from tests.support.two_phase import Plan, Turn, random_plan

CONDITIONS = ("base", "abl_message", "abl_submit", "camoc")
PROTOCOLS = ("broadcast", "p2p", "kv")


def _from_events(events: pd.DataFrame, phase: int | None) -> dict[str, int]:
    """R, tokens and communication tokens of one phase (None: the whole run), from events rows."""
    calls: dict[int, int] = defaultdict(int)
    tin = tout = comm = 0
    for row in events.itertuples():
        if phase is not None and row.phase != phase:
            continue
        if row.kind == "model_call":
            tin += row.tokens_in
            tout += row.tokens_out
            calls[row.agent] += bool(pd.isna(row.verb))  # a retry of an invalid reply is no round
        comm += row.tokens_comm
    return {"rounds": max(calls.values(), default=0), "tokens_in": tin, "tokens_out": tout,
            "tokens_total": tin + tout, "tokens_comm": comm}


def _check_phase_columns(run: pd.Series, events: pd.DataFrame, phases: int) -> None:
    n, k = int(run["agents"]), int(run["k"])
    for p in (1, 2):
        if p > phases:
            for name in ("rounds", "tokens_total", "tokens_comm", "te", "cr", "sr", "success", "submitted"):
                assert pd.isna(run[f"{name}_phase{p}"]), (name, p)
            continue
        hand = _from_events(events, p)
        for name, value in hand.items():
            assert run[f"{name}_phase{p}"] == value, (name, p)
        assert run[f"te_phase{p}"] == pytest.approx(n * k / hand["tokens_total"] * 1e5)
        assert run[f"cr_phase{p}"] == pytest.approx(hand["tokens_comm"] / hand["tokens_total"])
    whole = _from_events(events, None)
    for name, value in whole.items():
        assert run[name] == value, name
    assert run["te"] == pytest.approx(n * k / whole["tokens_total"] * 1e5)
    # the whole run's tokens are the phases' sums; its R is not (max over agents of their total calls)
    for name in ("tokens_in", "tokens_out", "tokens_comm"):
        assert run[name] == sum(run[f"{name}_phase{p}"] for p in range(1, phases + 1))
    if phases == 1:
        for name in ("rounds", "tokens_total", "te", "cr", "sr", "success", "check", "submitted"):
            assert run[f"{name}_phase1"] == run[name], name


def test_loopback_runs_record_each_phase_as_the_plan_and_the_server_say(tmp_path):
    rng = random.Random(14)
    cases = [(protocol, condition) for protocol, condition in itertools.product(PROTOCOLS, CONDITIONS)]
    plans: dict[str, Plan] = {}
    for i, (protocol, condition) in enumerate(cases + rng.sample(cases, 4)):
        plan = random_plan(rng, protocol, condition, seed=i)
        summary = plan.run(tmp_path)
        assert summary.status == "ok", summary.error
        plans[summary.run_id] = plan
    runs = pd.read_parquet(tmp_path / "runs").set_index("run_id")
    events = pd.read_parquet(tmp_path / "events")
    agents = pd.read_parquet(tmp_path / "agents")
    assert set(runs.index) == set(plans)
    for run_id, plan in plans.items():
        run = runs.loc[run_id]
        mine = events[events["run_id"] == run_id]
        _check_phase_columns(run, mine, plan.phases)
        for p in range(1, plan.phases + 1):
            served = [s for s in plan.served if s.phase == p]
            # R by eq. 5 within the phase, from the plan: an agent is called until it submits
            assert run[f"rounds_phase{p}"] == max(plan.calls(i, p) for i in range(plan.n))
            assert len(served) == sum(plan.calls(i, p) for i in range(plan.n))
            # the usage the server reported is its own word count of what it saw and sent
            assert run[f"tokens_in_phase{p}"] == sum(s.prompt_words for s in served)
            assert run[f"tokens_out_phase{p}"] == sum(s.reply_words for s in served)
            right = [plan.correct(i, p) for i in range(plan.n)]
            assert run[f"sr_phase{p}"] == pytest.approx(sum(right) / plan.n)
            assert bool(run[f"success_phase{p}"]) == all(right)
            assert bool(run[f"check_phase{p}"]) == all(right)  # CHECK (F.2): wrong blocks never concatenate right
            assert run[f"submitted_phase{p}"] == sum(plan.turns[i, p].answer != "none" for i in range(plan.n))
            talked = any(plan.turns[i, p].waits or plan.turns[i, p].answer == "none" for i in range(plan.n))
            assert (run[f"tokens_comm_phase{p}"] > 0) == talked
        assert run["rounds"] == max(sum(plan.calls(i, p) for p in range(1, plan.phases + 1)) for i in range(plan.n))
        assert run["sr"] == run[f"sr_phase{plan.phases}"]
        rows = agents[agents["run_id"] == run_id].set_index("agent")
        for i in range(plan.n):
            if plan.phases == 2:
                assert rows.loc[i, "correct_phase1"] == plan.correct(i, 1)
                assert rows.loc[i, "correct"] == plan.correct(i, 2)
            else:
                assert pd.isna(rows.loc[i, "correct_phase1"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_scripted_policy_runs_split_into_their_phases(tmp_path, protocol):
    """The classical baseline: both phases of a two-phase run cost alike, and each phase's
    columns are what its events add up to."""
    for condition, (n, k) in itertools.product(CONDITIONS, [(1, 2), (4, 3)]):
        cfg = RunConfig.from_mapping(dict(task="sorting", protocol=protocol, agents=n, k=k, mode="random",
                                          condition=condition, seed=3, results_dir=str(tmp_path),
                                          execution={"executor": "local"}))
        assert run_local(cfg).status == "ok"
    runs = pd.read_parquet(tmp_path / "runs")
    events = pd.read_parquet(tmp_path / "events")
    assert len(runs) == 8
    for _, run in runs.iterrows():
        phases = 2 if run["condition"] in ("camoc", "abl_message") else 1
        _check_phase_columns(run, events[events["run_id"] == run["run_id"]], phases)
        assert run["rounds_phase1"] == (1 if run["agents"] == 1 else 3)
        if phases == 2:
            assert run["rounds_phase2"] == run["rounds_phase1"] and run["rounds"] == 2 * run["rounds_phase1"]
            assert run["tokens_comm_phase2"] == run["tokens_comm_phase1"]
            # the rerun prompt carries the phase-1 answer: phase 2 reads more, TE of either phase
            # is near twice the whole run's
            assert run["tokens_in_phase2"] > run["tokens_in_phase1"]
            assert 1.8 < run["te_phase1"] / run["te"] < 2.2


def test_phase_columns_refuse_mismatched_inputs_and_null_a_missing_phase():
    usage = PhaseUsage(rounds=2, tokens_in=10, tokens_out=5, tokens_comm=3)
    score = Score(success=False, correct=[True, False], partial=[1.0, 0.0], metrics={"check": False})
    cols = phase_columns([usage], [score], [[[1], None]])
    assert cols["tokens_total_phase1"] == 15 and cols["submitted_phase1"] == 1 and cols["sr_phase1"] == 0.5
    assert all(v is None for name, v in cols.items() if name.endswith("_phase2"))
    with pytest.raises(ValueError, match="phase metrics"):
        phase_columns([usage, usage], [score], [[None, None]])
    with pytest.raises(ValueError, match="at most 2 phases"):
        phase_columns([usage] * 3, [score] * 3, [[None, None]] * 3)


def test_on_ray_actors_the_phase_columns_match_the_plan(tmp_path, ray_session):
    """The same accounting when driver, environment and agent hosts are Ray actors."""
    plan = Plan(protocol="p2p", condition="camoc", n=3, k=2, seed=8, turns={
        (0, 1): Turn(1, "right"), (1, 1): Turn(0, "wrong_a"), (2, 1): Turn(3, "right"),
        (0, 2): Turn(0, "right"), (1, 2): Turn(2, "right"), (2, 2): Turn(0, "wrong_b")})
    with ChatServer(plan.reply, models=("scripted-loopback",)) as server:
        cfg = plan.config(tmp_path, server.base_url)
        cfg = RunConfig.from_mapping({**cfg.model_dump(), "execution": {**cfg.execution.model_dump(), "executor": "ray"}})
        assert cfg.execution.executor == "ray"
        summary = run_one(cfg)
    assert summary.status == "ok", summary.error
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    _check_phase_columns(run, pd.read_parquet(tmp_path / "events"), 2)
    assert (run["rounds_phase1"], run["rounds_phase2"], run["rounds"]) == (4, 3, 5)
    assert (run["sr_phase1"], run["sr_phase2"]) == pytest.approx((2 / 3, 2 / 3))
    for p in (1, 2):
        assert run[f"tokens_total_phase{p}"] == plan.tokens(p)
