"""sweep.budget: which runs a budgeted sweep starts, replayed here from the recorded spends by
the rule written out independently; resuming with the same and a larger budget; the refusal
of a budget in money over an unpriced preset; the --plan estimate against a hand-computed
mean; cached tokens and team members priced as the runs and agents tables record them."""

from __future__ import annotations

import pandas as pd
import pytest

from masgrid._private.platform.commands.cli import main

PRICE = {"input_usd_per_mtok": 1.5, "output_usd_per_mtok": 6.0}
PRICE_ARG = "+model.price={input_usd_per_mtok:1.5,output_usd_per_mtok:6.0}"


def usd(tokens_in: float, tokens_out: float, price: dict = PRICE) -> float:
    return tokens_in * price["input_usd_per_mtok"] / 1e6 + tokens_out * price["output_usd_per_mtok"] / 1e6


def local_runs(results_dir, agents: list[int], seeds: list[int]) -> pd.DataFrame:
    """Scripted runs in this process (no Ray): what each grid point spends."""
    for a in agents:
        for s in seeds:
            assert main(["run", f"agents={a}", "k=1", f"seed={s}", "execution.executor=local",
                         f"results_dir={results_dir}"]) == 0
    return pd.read_parquet(results_dir / "runs")


def replay(order: list[tuple[int, int]], spend: dict[tuple[int, int], float], budget: float) -> list[tuple[int, int]]:
    """The runs a sweep with one run in flight starts: the first queued run whose projection (mean
    spend of its cell's finished runs, else of all finished runs, else unknown) fits; an unknown
    projection fits while something is left. `order`: (agents, seed) in grid order."""
    queue, done = list(order), []
    while queue:
        spent = sum(spend[r] for r in done)
        for run in queue:
            cell = [spend[r] for r in done if r[0] == run[0]]
            pool = cell or [spend[r] for r in done]
            if (spent + sum(pool) / len(pool) <= budget) if pool else spent < budget:
                break
        else:
            return done
        queue.remove(run)
        done.append(run)
    return done


def sweep_args(results_dir, *extra: str) -> list[str]:
    return ["run", "-m", "agents=1,2,3", "k=1", "seed=0,1", f"results_dir={results_dir}", "sweep.progress=plain",
            "sweep.max_concurrent=1", "sweep.admission=fixed", *extra]


def started(results_dir) -> set[tuple[int, int]]:
    runs = pd.read_parquet(results_dir / "runs")
    return {(int(a), int(s)) for a, s in zip(runs["agents"], runs["seed"])}


def recorded_spend(results_dir, price: dict | None = None) -> dict[tuple[int, int], float]:
    runs = pd.read_parquet(results_dir / "runs")
    return {(int(r.agents), int(r.seed)): float(usd(r.tokens_in, r.tokens_out) if price else r.tokens_in + r.tokens_out)
            for r in runs.itertuples()}


ORDER = [(a, s) for a in (1, 2, 3) for s in (0, 1)]  # the grid's order: the first override varies slowest


@pytest.mark.slow
def test_token_budget_starts_what_fits_and_a_larger_one_resumes(tmp_path, ray_session, capsys):
    ref = local_runs(tmp_path / "ref", [1, 2], [0])
    one = {int(a): float(i + o) for a, i, o in zip(ref["agents"], ref["tokens_in"], ref["tokens_out"])}
    assert one[2] > 4 * one[1]  # so the budget below passes over a run and starts a later, cheaper one
    budget = int(2 * one[1] + 1.5 * one[2])
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(sweep_args(out, f"sweep.budget.tokens={budget}")) == 0
    text = capsys.readouterr().out
    want = replay(ORDER, recorded_spend(out), budget)
    assert started(out) == set(want) and 0 < len(want) < len(ORDER)
    assert (2, 1) not in want and (3, 0) in want  # passed over at its cell's mean; a later run fit the sweep's
    spent = sum(recorded_spend(out).values())
    left = len(ORDER) - len(want)
    per_cell = ", ".join(f"agents={a}: {n}" for a in (1, 2, 3) if (n := sum(r[0] == a for r in ORDER if r not in want)))
    assert f"not started {left} (over budget)" in text
    assert f"budget: {left} of 6 runs not started ({per_cell}): spent {spent:,.0f} of {budget:,} tokens" in text
    assert "run again with a larger sweep.budget.tokens to run them" in text

    assert main(sweep_args(out, f"sweep.budget.tokens={budget}")) == 0  # same budget: nothing more
    text = capsys.readouterr().out
    assert started(out) == set(want) and f"budget: {left} of 6 runs not started ({per_cell}): spent {spent:,.0f} of" in text
    assert f"budget: the sweep's recorded runs spent {spent:,.0f} of {budget:,} tokens" in text  # counted on resume

    assert main(sweep_args(out, "sweep.budget.tokens=100000000")) == 0
    text = capsys.readouterr().out
    assert started(out) == set(ORDER) and "every run of the sweep started" in text
    assert f"spent {sum(recorded_spend(out).values()):,.0f} of 100,000,000 tokens" in text


@pytest.mark.slow
def test_usd_budget_prices_the_overridden_preset(tmp_path, ray_session, capsys):
    ref = local_runs(tmp_path / "ref", [1, 3], [0])
    cost = {int(r.agents): usd(r.tokens_in, r.tokens_out) for r in ref.itertuples()}
    budget = round(2 * cost[1] + 0.5 * cost[3], 6)  # cell 1 twice, then the sweep mean lets cell 2 start
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(sweep_args(out, f"sweep.budget.usd={budget}", PRICE_ARG)) == 0
    text = capsys.readouterr().out
    want = replay(ORDER, recorded_spend(out, PRICE), budget)
    assert started(out) == set(want) and 0 < len(want) < len(ORDER)
    assert f"budget: {len(ORDER) - len(want)} of 6 runs not started (" in text and "sweep.budget.usd" in text


def test_usd_budget_without_price_is_one_line_and_starts_nothing(tmp_path, capsys):
    assert main(["run", "-m", "agents=1,2", "k=1", f"results_dir={tmp_path / 'r'}", "sweep.budget.usd=5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("masgrid run: sweep.budget.usd needs the price of every model the runs use, and model preset "
                       "scripted has none: set model.price.input_usd_per_mtok and model.price.output_usd_per_mtok "
                       "(US dollars per million tokens), or budget in tokens (sweep.budget.tokens)")
    assert not (tmp_path / "r" / "runs").exists()


def test_plan_estimates_each_cell_from_its_recorded_runs(tmp_path, capsys):
    runs = local_runs(tmp_path, [1], [0, 1])
    tokens = (runs["tokens_in"] + runs["tokens_out"]).mean()
    money = usd(runs["tokens_in"], runs["tokens_out"]).mean()
    capsys.readouterr()
    assert main(["run", "-m", "agents=1,2", "k=1", "seed=0,1,2", f"results_dir={tmp_path}", PRICE_ARG,
                 "sweep.budget.tokens=1000000", "--plan"]) == 0
    out = capsys.readouterr().out
    assert f"  agents=1: 1 run x {tokens:,.0f} tokens / ${money:.3g} = {tokens:,.0f} tokens / ${money:.3g} " \
           "(mean of 2 recorded runs)" in out
    assert "  agents=2: 3 runs: no recorded runs: cost unknown" in out
    assert f"  total: {tokens:,.0f} tokens / ${money:.3g} for 1 of 4 runs; 3 runs of cost unknown" in out
    spent = (runs["tokens_in"] + runs["tokens_out"]).sum()
    assert f"budget: the sweep's recorded runs spent {spent:,.0f} of 1,000,000 tokens" in out


def _cfg(tmp_path, seed: int, **extra):
    from masgrid._private.platform.run.config import RunConfig

    return RunConfig.from_mapping({"agents": 2, "k": 1, "seed": seed, "results_dir": str(tmp_path), **extra})


def test_cached_tokens_cost_nothing_and_runs_in_flight_hold_room(tmp_path):
    from masgrid._private.platform.sweeps.budget import BudgetSettings, SweepBudget

    a, b, c = (_cfg(tmp_path, s, model={"name": "scripted", "price": PRICE}) for s in range(3))
    budget = SweepBudget(BudgetSettings(tokens=1000, usd=1.0))
    budget.include([a, b, c])
    assert budget.may_start(a)  # nothing finished: the projection is unknown and the run may start
    budget.started(a)
    budget.ended(a)
    row = {"status": "ok", "tokens_in": 300, "tokens_out": 100, "tokens_in_from_cache": 50, "tokens_out_from_cache": 20}
    budget.ledger.record(a, row)
    assert budget.ledger.spent.tokens == 330 and budget.ledger.spent.usd == pytest.approx(usd(250, 80))
    budget.started(b)  # 330 spent + 330 projected in flight + 330 for c fits 1000 ...
    assert budget.may_start(c)
    budget.settings = BudgetSettings(tokens=980)  # ... but not 980
    assert not budget.may_start(c)
    budget.ended(b)
    budget.ledger.record(b, None)  # its driver died: no row, no token counts
    budget.set_aside([c])
    assert budget.line() == ("budget: 1 of 3 runs not started: spent 330 of 980 tokens, the next run projects 330 "
                             "tokens (cell mean of 1 run); run again with a larger sweep.budget.tokens to run them; "
                             "1 run(s) recorded no token counts (their drivers died): not counted")


def test_team_members_are_priced_each_at_its_own_price(tmp_path):
    """A scripted team of two members with different prices, run in this process; its spend
    against the agents table's per-agent tokens priced by hand."""
    from masgrid._private.platform.sweeps.spend import run_spend, unpriced

    cheap, dear = {"input_usd_per_mtok": 0.5, "output_usd_per_mtok": 1.0}, {"input_usd_per_mtok": 4.0,
                                                                          "output_usd_per_mtok": 12.0}
    team = {"models": ["scripted", "alt"], "presets": {"scripted": {"price": cheap},
                                                        "alt": {"preset": "scripted", "price": dear}}}
    cfg = _cfg(tmp_path, 0, team=team)
    assert unpriced([cfg]) is None
    assert "team member alt (preset scripted) has none" in unpriced(
        [_cfg(tmp_path, 0, team={**team, "presets": {"scripted": {"price": cheap}, "alt": {"preset": "scripted"}}})])
    assert main(["run", "agents=2", "k=1", "seed=0", "execution.executor=local", f"results_dir={tmp_path}",
                 "team.models=[scripted,alt]", "+team.presets.scripted.price={input_usd_per_mtok:0.5,output_usd_per_mtok:1.0}",
                 "+team.presets.alt={preset:scripted,price:{input_usd_per_mtok:4.0,output_usd_per_mtok:12.0}}"]) == 0
    row = pd.read_parquet(tmp_path / "runs").iloc[0].to_dict()
    agents = pd.read_parquet(tmp_path / "agents")
    by_price = {"scripted": cheap, "alt": dear}
    want = sum(usd(r.tokens_in, r.tokens_out, by_price[r.model_preset]) for r in agents.itertuples())
    assert set(agents["model_preset"]) == {"scripted", "alt"}
    spend = run_spend(row, cfg, priced=True)
    assert spend is not None and spend.usd == pytest.approx(want) and not spend.usd_bound
    assert spend.tokens == agents["tokens_in"].sum() + agents["tokens_out"].sum()


@pytest.mark.slow
def test_adaptive_sweep_stops_undecided_at_the_budget_and_resumes(tmp_path, ray_session, capsys):
    """A look the budget cuts short: its open cells stop with reason budget, counting only the
    seeds that ran; a larger budget then finishes the sweep exactly as the rule decides."""
    from masgrid._private.analysis.cells import read_cells
    from masgrid._private.platform.sweeps.stopping import AdaptiveSettings
    from tests.platform.sweeps.test_adaptive import BASE, check_cells_against_runs

    assert main(["run", *BASE, "agentsnet.rounds=2", "seed=0", "execution.executor=local",
                 f"results_dir={tmp_path / 'ref'}"]) == 0
    ref = pd.read_parquet(tmp_path / "ref" / "runs")
    budget = int(2.5 * float(ref["tokens_in"].iloc[0] + ref["tokens_out"].iloc[0]))  # about two runs of rounds=2
    rule = {"width": 0.5, "min_seeds": 2, "batch": 2, "max_seeds": 6}
    out = tmp_path / "out"
    args = ["run", "-m", *BASE, "agentsnet.rounds=2,4", f"results_dir={out}", "sweep.max_concurrent=1",
            "sweep.admission=fixed", "sweep.progress=plain", *(f"sweep.adaptive.{k}={v}" for k, v in rule.items())]
    capsys.readouterr()
    assert main([*args, f"sweep.budget.tokens={budget}"]) == 0
    text = capsys.readouterr().out
    runs = pd.read_parquet(out / "runs")
    spend = {(json_rounds(r.config_json), int(r.seed)): float(r.tokens_in + r.tokens_out) for r in runs.itertuples()}
    want = replay([(2, 0), (2, 1), (4, 0), (4, 1)], spend, budget)  # the first look, in grid order
    assert set(spend) == set(want) and 0 < len(want) < 4
    cells = read_cells(out).set_index("cell")
    for rounds in (2, 4):
        row = cells.loc[f"agentsnet.rounds={rounds}"]
        ran = sum(1 for r, _ in want if r == rounds)
        assert (row["reason"], row["n_seeds"], row["n_failed"]) == ("budget", ran, 0)
    assert f"budget: {4 - len(want)} of 4 runs not started (agentsnet.rounds=" in text

    assert main([*args, "sweep.budget.tokens=1000000000"]) == 0
    check_cells_against_runs(out, AdaptiveSettings(**rule), [2, 4])


def json_rounds(config_json: str) -> int:
    import json

    return int(json.loads(config_json)["agentsnet"]["rounds"])


def test_api_sweep_takes_a_budget_and_refuses_what_it_cannot_price(tmp_path):
    import masgrid
    from masgrid._private.platform.run.config import ConfigError

    with pytest.raises(ConfigError, match="model preset scripted has none"):
        masgrid.sweep({"agents": [1, 2]}, "k=1", f"results_dir={tmp_path}", budget={"usd": 1})
    with pytest.raises(ConfigError, match="sweep.budget.dollars"):
        masgrid.sweep({"agents": [1, 2]}, "k=1", f"results_dir={tmp_path}", budget={"dollars": 1})
    assert not (tmp_path / "runs").exists()
