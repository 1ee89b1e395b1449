"""Mixed-model teams (docs/team.md): placement against an independent recomputation, the
config surface (one-line refusals, run ids without a team unchanged), a scripted `-m` sweep
over placements on Ray, and a scripted + model team against a loopback endpoint with
per-member accounting, validity and preflight."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
from masgrid._private.platform.run.team import TeamSettings, parse_composition, place, slots
from tests.support.chat_server import ChatServer, Reply

ROOT = Path(__file__).resolve().parents[3]


# -- an independent placement, written from docs/team.md -------------------------------------------
def expected_members(composition: list[tuple[str, int | None]], n: int, placement: str, seed: int,
                     degrees: list[int] | None) -> list[str]:
    """docs/team.md: the seeded draw is `random.Random("masgrid-team:<seed>").shuffle` of the ids;
    agents ordered by (degree desc | degree asc | nothing), then by their place in the draw,
    take the counted members in the order written, the rest member after them."""
    drawn = list(range(n))
    random.Random(f"masgrid-team:{seed}").shuffle(drawn)
    place_in_draw = np.empty(n, dtype=int)
    place_in_draw[np.array(drawn)] = np.arange(n)
    if placement == "random":
        ordered = np.argsort(place_in_draw, kind="stable")
    else:
        deg = np.array(degrees)
        primary = -deg if placement == "by_degree" else deg
        ordered = np.lexsort((place_in_draw, primary))  # last key sorts first
    wanted: list[str] = []
    for member, count in composition:
        if count is not None:
            wanted += [member] * count
    rest = [m for m, c in composition if c is None]
    wanted += rest * (n - len(wanted))
    out = ["?"] * n
    for agent, member in zip(ordered.tolist(), wanted):
        out[agent] = member
    return out


def test_placement_equals_an_independent_recomputation_on_many_seeds():
    rng = random.Random(7)
    for case in range(400):
        n = rng.randint(2, 30)
        strong = rng.randint(0, n)
        comp = [("s", strong), ("w", None)] if rng.random() < 0.7 else [("s", strong), ("m", n - strong)]
        graph = nx.gnp_random_graph(n, rng.random(), seed=case) if case % 2 else nx.barabasi_albert_graph(
            max(n, 3), 1, seed=case).subgraph(range(n)).copy()
        degrees = [graph.degree(i) for i in range(n)]
        seed = rng.randint(-2**40, 2**40)
        for placement in ("random", "by_degree", "leaves"):
            got = place(slots(comp, n), placement, seed, graph)
            assert got == expected_members(comp, n, placement, seed, degrees), (case, placement)
            assert Counter(got)["s"] == strong
            s_deg = [d for d, m in zip(degrees, got) if m == "s"]
            o_deg = [d for d, m in zip(degrees, got) if m != "s"]
            if s_deg and o_deg and placement == "by_degree":
                assert min(s_deg) >= max(o_deg)
            if s_deg and o_deg and placement == "leaves":
                assert max(s_deg) <= min(o_deg)


def test_composition_forms_agree_and_bad_ones_are_refused():
    forms = [{"a": 2, "rest": "b"}, [{"model": "a", "count": 2}, {"model": "b", "count": "rest"}],
             "2xa+restxb", "2×a + rest*b"]
    assert all(parse_composition(f) == [("a", 2), ("b", None)] for f in forms)
    for bad, words in [({"a": -1}, ">= 0"), ({"a": True}, "whole number"), ("2a", "not <count>x<member>"),
                       ([{"model": "a"}], "list entries"), ("1xa+restxb+restxc", "only one member"),
                       ("1xa+2xa", "named more than once"), ({}, "empty")]:
        with pytest.raises(ValueError, match=words):
            parse_composition(bad)


AN = {"task": "agentsnet/coloring", "graph": "ws", "agents": 6, "max_rounds": 2}
ALT = {"alt": {"preset": "scripted"}}  # a second member name for the task's classical policy


def one_line_error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        RunConfig.from_mapping(data)
    lines = str(info.value).splitlines()
    assert len(lines) == 2 and lines[0] == "invalid configuration:"  # the config's one-line form
    return lines[1].strip()


def test_bad_teams_are_one_line_before_ray_starts():
    assert one_line_error({**AN, "team": {"composition": {"nope": 1, "rest": "scripted"}}}).startswith(
        "team: unknown model preset 'nope'; conf/model has ")
    assert one_line_error({**AN, "team": {"composition": {"scripted": 7}}}) == \
        "team.composition: counts sum to 7, the run has 6 agents"
    assert "give the others a member with rest" in one_line_error({**AN, "team": {"composition": {"scripted": 2}}})
    assert one_line_error({**AN, "team": {"models": ["scripted"] * 5}}) == \
        "team.models: 5 members for 6 agents (one per agent)"
    assert one_line_error({**AN, "team": {"composition": {"tiny_cpu": 1, "rest": "scripted"}}}).startswith(
        "team: member tiny_cpu is a model (preset tiny_cpu); set backend=openai or backend=serve")
    assert one_line_error({**AN, "backend": "openai", "team": {"composition": {"standin": 1, "rest": "scripted"}}}) \
        == "team: member standin (preset standin) has no base_url for backend=openai; set team.presets.standin.base_url"
    assert one_line_error({"task": "sorting", "agents": 4, "team": {
        "composition": {"scripted": 1, "rest": "alt"}, "placement": "leaves", "presets": ALT}}).startswith(
        "team.placement: leaves needs the run's communication graph; this task has none")
    assert one_line_error({**AN, "team": {"composition": {"scripted": 1, "rest": "alt"}, "placement": "star"}}
                          ).startswith("team.placement: Input should be")
    assert one_line_error({**AN, "team": {"models": ["scripted"] * 6, "composition": {"scripted": 6}}}) == \
        "team: set team.models (one per agent) or team.composition (counts), not both"
    assert one_line_error({**AN, "team": {"composition": {"scripted": 1, "rest": "alt"},
                                          "presets": {"alt": {"preset": "scripted", "top_p": 7}}}}).startswith(
        "team.presets.alt.top_p: ")
    assert one_line_error({**AN, "team": {"composition": {"scripted": 1, "rest": "alt"},
                                          "presets": {"alt": {"preset": "local_vllm", "backend": "grpc"}}}}) == \
        "team.presets.alt.backend: openai or serve (a model member's backend), not 'grpc'"


def test_no_team_keeps_every_run_id_and_a_team_changes_it():
    # run ids computed by the code before teams existed (commit 593fb82)
    before = {"81f20f3ca0551d4f": {}, "9f5e7213b70b1a9b": {**AN, "agents": 6, "seed": 3, "max_rounds": 100},
              "3813d34d29dbb2f5": {"task": "sorting", "protocol": "kv", "agents": 3, "k": 2, "backend": "openai",
                                   "model": {"name": "tiny", "base_url": "http://127.0.0.1:1/v1"}}}
    for run_id, data in before.items():
        assert RunConfig.from_mapping(data).run_id == run_id
        assert RunConfig.from_mapping({**data, "team": TeamSettings().model_dump()}).run_id == run_id
        assert "team" not in RunConfig.from_mapping(data).identity()
    from masgrid import compose

    # through Hydra (conf/config.yaml now holds the empty team block), ids taken before teams existed
    assert compose()[0].run_id == "563041a2dabd1565"
    assert compose("task=agentsnet/coloring", "graph=ws", "agents=6")[0].run_id == "66262a785b175444"
    ids = {RunConfig.from_mapping({**AN, "team": {"composition": {"scripted": 2, "rest": "alt"}, "placement": p,
                                                  "presets": ALT}}).run_id for p in ("random", "by_degree", "leaves")}
    assert len(ids) == 3 and "9f5e7213b70b1a9b" not in ids


def test_minus_m_sweeps_over_compositions_and_placements_compose():
    from masgrid._private.platform.sweeps.compose import multirun_jobs
    from masgrid._private.platform.sweeps.sweep import split_job_config

    composer, jobs = multirun_jobs(["task=agentsnet/coloring", "graph=ws", "agents=6",
                                    "team.composition={scripted:1,rest:alt},{scripted:3,rest:alt}",
                                    "team.placement=random,by_degree,leaves", "+team.presets.alt.preset=scripted"])
    cfgs = [split_job_config(composer.compose(job, i)[1])[0] for i, job in enumerate(jobs)]
    assert len(cfgs) == 6 and len({c.run_id for c in cfgs}) == 6
    assert {(c.team_resolved.placement, Counter(c.team_resolved.agents)["scripted"]) for c in cfgs} == {
        (p, n) for p in ("random", "by_degree", "leaves") for n in (1, 3)}


def test_scripted_sweep_over_placements_records_the_placement(tmp_path, ray_session):
    """`masgrid run -m` on Ray: every agent row names the member an independent placement gives
    it on the instance's own graph; runs carry composition, placement and the strong member's degree."""
    env = dict(os.environ, RAY_ADDRESS=ray_session.get_runtime_context().gcs_address, RAY_AUTH_MODE="disabled")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m", "task=agentsnet/coloring",
                          "graph=ws,ba", "agents=7", "seed=4", "agentsnet.rounds=2", "team.composition={scripted:2,rest:alt}",
                          "team.placement=random,by_degree,leaves", "+team.presets.alt.preset=scripted",
                          f"results_dir={tmp_path}", "sweep.progress=off", "sweep.max_concurrent=3"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    runs, agents = pd.read_parquet(tmp_path / "runs"), pd.read_parquet(tmp_path / "agents")
    assert len(runs) == 6 and set(runs["status"]) == {"ok"}
    assert set(runs["team_composition"]) == {"5×alt+2×scripted"} and set(runs["team_strong"]) == {"scripted"}
    task = get_task("agentsnet/coloring")
    for run in runs.itertuples():
        instance = task.generate(7, 1, 4, graph=run.graph, rounds=2)
        index = {name: i for i, name in enumerate(instance.meta["names"])}
        degrees = [0] * 7  # from the instance's own edge list, not through the code under test
        for u, v in instance.meta["edges"]:
            degrees[index[u]] += 1
            degrees[index[v]] += 1
        want = expected_members([("scripted", 2), ("alt", None)], 7, run.team_placement, 4, degrees)
        rows = agents[agents["run_id"] == run.run_id].sort_values("agent")
        assert rows["model_preset"].tolist() == want
        assert set(rows["backend"]) == {"scripted"} and set(rows["model"]) == {"scripted"}
        strong = [d for d, m in zip(degrees, want) if m == "scripted"]
        assert run.team_strong_degree == pytest.approx(sum(strong) / 2)
        assert run.model == run.team_composition
    from masgrid._private.analysis.report import build_report

    build_report(tmp_path)
    index = (tmp_path / "report" / "README.md").read_text()
    assert "## Teams" in index and (tmp_path / "report" / "teams" / "success_by_placement.png").stat().st_size > 0
    table = pd.read_csv(tmp_path / "report" / "teams" / "success_by_composition.csv")
    assert sorted(table["team_placement"]) == ["by_degree", "leaves", "random"]
    for row in table.itertuples():
        cell = runs[runs["team_placement"] == row.team_placement]
        assert row.runs == len(cell) == 2 and row.success == pytest.approx(cell["success"].mean())


def test_scripted_and_model_agents_in_one_team_account_per_member(tmp_path, ray_session):
    """Two loopback endpoints (one answering, one failing every call) and scripted agents: each
    agent calls its own member's endpoint; tokens per member equal the events' sums; the failing
    member is judged alone (invalid) though the pooled rate would hide it; preflight checks both."""
    good = ChatServer(lambda body: Reply(text="thinking"), models=("good",))
    # the bad endpoint answers preflight's 1-token probe, then fails every agent call
    bad = ChatServer(lambda body: Reply(text="ok") if body.get("max_tokens") == 1 else Reply(status=500, text="down"),
                     models=("bad",))
    with good, bad:
        presets = {"good": {"preset": "local_vllm", "name": "good", "base_url": good.base_url, "max_retries": 0},
                   "bad": {"preset": "local_vllm", "name": "bad", "base_url": bad.base_url, "max_retries": 0}}
        data = {"task": "sorting", "protocol": "broadcast", "agents": 40, "k": 1, "max_rounds": 3, "seed": 5,
                "backend": "openai", "results_dir": str(tmp_path),
                "validity": {"max_model_error_rate": 0.05},
                "team": {"models": ["good", "good", "bad"] + ["scripted"] * 37, "presets": presets}}
        cfg = RunConfig.from_mapping(data)
        preflight([cfg])
        assert {r["model"] for r in map(json.loads, (tmp_path / "preflight.jsonl").read_text().splitlines())} == {
            "good", "bad"}
        from masgrid._private.platform.sweeps.ray_runs import run_many

        (summary,) = run_many([cfg])
    assert summary.status == "invalid"
    assert summary.error == ("invalid: member bad (invalid): 3 of 3 model calls failed (100.0%, above the 0.05 "
                             "limit): http_5xx x3")
    runs, agents, events = (pd.read_parquet(tmp_path / t) for t in ("runs", "agents", "events"))
    run = runs.iloc[0]
    assert run["model_errors"] / run["model_calls"] < 0.05  # the pooled rate would call it degraded
    assert run["team_composition"] == "37×scripted+2×good+1×bad" and run["team_placement"] == "explicit"
    assert agents.sort_values("agent")["model_preset"].tolist() == data["team"]["models"]
    assert agents.sort_values("agent")["backend"].tolist() == ["openai"] * 3 + ["scripted"] * 37
    # each agent called its own endpoint; the rest are masgrid's 1-token probes: preflight's,
    # and the outage check after the failed calls, which probes every endpoint of the team
    for server, calls in ((good, 2 * 3), (bad, 3)):
        probes = [r for r in server.requests if r.get("max_tokens") == 1]
        assert len(server.requests) - len(probes) == calls and 1 <= len(probes) <= 3
    member = dict(zip(agents["agent"], agents["model_preset"]))
    calls = events[events["kind"] == "model_call"].assign(member=lambda e: e["agent"].map(member))
    summed = calls.groupby("member")[["tokens_in", "tokens_out"]].sum()
    breakdown = json.loads(run["team_by_model"])
    for name, row in breakdown.items():
        assert row["tokens_in"] == summed.loc[name, "tokens_in"] and row["tokens_out"] == summed.loc[name, "tokens_out"]
        assert row["model_calls"] == (calls["member"] == name).sum()
        assert row["model_errors"] == ((calls["member"] == name) & ~calls["ok"]).sum()
    assert {n: r["status"] for n, r in breakdown.items()} == {"bad": "invalid", "good": "ok", "scripted": "ok"}
    assert breakdown["good"]["model"] == "good" and breakdown["scripted"]["backend"] == "scripted"


def test_preflight_names_the_failing_member_endpoint(tmp_path):
    good = ChatServer(lambda body: Reply(text="ok"), models=("good",))
    with good:
        # the run's backend is scripted: each model member names its own
        presets = {"good": {"preset": "local_vllm", "name": "good", "base_url": good.base_url, "backend": "openai"},
                   "gone": {"preset": "local_vllm", "name": "gone", "base_url": "http://127.0.0.1:9/v1",
                            "backend": "openai"}}
        cfg = RunConfig.from_mapping({"task": "sorting", "agents": 3, "k": 1, "backend": "scripted",
                                      "results_dir": str(tmp_path),
                                      "team": {"models": ["good", "gone", "scripted"], "presets": presets}})
        with pytest.raises(PreflightError) as info:
            preflight([cfg])
    assert [m.backend for m in cfg.team_resolved.members.values()] == ["openai", "openai", "scripted"]
    assert str(info.value) == "preflight http://127.0.0.1:9/v1 (model gone): cannot connect: connection refused"


def test_team_tables_equal_an_independent_count():
    from scipy.stats import binomtest

    from masgrid._private.analysis.dispersion import wilson
    from masgrid._private.analysis.teams import by_composition, by_strong_degree, team_runs, write_teams_section

    rng = np.random.default_rng(3)
    n = 300
    runs = pd.DataFrame({
        "run_id": [f"r{i}" for i in range(n)], "task": rng.choice(["t1", "t2"], n),
        "team_composition": rng.choice(["1×a+3×b", "2×a+2×b", None], n),
        "team_strong": "a", "team_placement": rng.choice(["random", "by_degree", "leaves"], n),
        "team_strong_degree": rng.choice([1.0, 1.25, 2.0, 3.5, np.nan], n),
        "success": rng.choice([True, False, None], n), "sr": rng.random(n),
        "status": rng.choice(["ok", "degraded", "invalid"], n, p=[0.6, 0.2, 0.2])})
    teams = team_runs(runs)
    assert set(teams["status"]) <= {"ok", "degraded"} and teams["team_composition"].notna().all()
    table = by_composition(teams)
    for row in table.rename(columns={"ci95 low": "low", "ci95 high": "high"}).itertuples():
        cell = [r for r in runs.itertuples() if r.task == row.task and r.team_composition == row.team_composition
                and r.team_placement == row.team_placement and r.status in ("ok", "degraded")
                and not pd.isna(r.success)]
        k = sum(bool(r.success) for r in cell)
        assert (row.runs, row.solved) == (len(cell), k)
        ci = binomtest(k, len(cell)).proportion_ci(0.95, method="wilson")
        assert (row.low, row.high) == pytest.approx((ci.low, ci.high))
    assert table["runs"].sum() == sum(1 for r in runs.itertuples() if isinstance(r.team_composition, str)
                                      and r.status != "invalid" and not pd.isna(r.success))
    degree = by_strong_degree(teams)
    assert set(degree["strong_degree"]) <= {1.0, 2.0, 3.5}  # 1.25 rounds to the nearest half: 1.0
    assert all(math.isnan(v) for v in wilson(0, 0))  # no runs, no interval
    assert write_teams_section(runs.drop(columns="team_composition"), Path("/nonexistent")) == ([], [])


def test_a_family_model_preset_can_be_a_team_member():
    """Presets that live in a family's conf/model (moved there with the family) resolve like core ones."""
    from masgrid._private.platform.run.team import load_preset, preset_names

    assert {"simas_qwen2_5_7b", "tiny_cpu", "scripted"} <= set(preset_names())
    assert load_preset("simas_qwen2_5_7b")["name"] == "qwen2.5-7b-instruct"


def test_placement_by_position_reads_the_topology():
    """A star on a task without a graph of its own: by_degree puts the strong member at the hub
    (node 0 of networkx's star), leaves never does; the complete graph refuses both."""
    base = {"task": "sorting", "protocol": "p2p", "agents": 6, "k": 2, "max_rounds": 20, "backend": "serve",
            "team": {"composition": {"scripted": 1, "rest": "standin"}}}
    hub = RunConfig.from_mapping({**base, "topology": {"kind": "star"}, "team": {**base["team"], "placement": "by_degree"}})
    assert hub.team_resolved.agents[0] == "scripted" and hub.team_resolved.agents.count("scripted") == 1
    for seed in range(5):
        spoke = RunConfig.from_mapping({**base, "seed": seed, "topology": {"kind": "star"},
                                        "team": {**base["team"], "placement": "leaves"}})
        assert spoke.team_resolved.agents[0] == "standin"
    with pytest.raises(ConfigError, match="by_degree"):
        RunConfig.from_mapping({**base, "team": {**base["team"], "placement": "by_degree"}})


def test_a_team_endpoint_lost_mid_run_interrupts_the_run_not_its_member(tmp_path, ray_session):
    """Two endpoints; one stops listening after its first agent call: the run ends interrupted,
    naming that endpoint, and is not judged as the member's model failures; a second run of
    the same sweep that calls it is not started."""
    import threading

    good = ChatServer(lambda body: Reply(text="thinking"), models=("good",))
    state = {"calls": 0}

    def vanish(body: dict) -> Reply:
        if body.get("max_tokens") == 1:  # preflight's probe
            return Reply(text="ok")
        state["calls"] += 1
        if state["calls"] == 1:  # the engine dies: it stops listening for good
            threading.Thread(target=lambda: (gone.httpd.shutdown(), gone.httpd.server_close()), daemon=True).start()
        return Reply(status=500, text="dying")

    gone = ChatServer(vanish, models=("gone",))
    with good:
        gone.__enter__()
        presets = {"good": {"preset": "local_vllm", "name": "good", "base_url": good.base_url, "max_retries": 0},
                   "gone": {"preset": "local_vllm", "name": "gone", "base_url": gone.base_url, "max_retries": 0}}
        data = {"task": "sorting", "protocol": "broadcast", "agents": 6, "k": 1, "max_rounds": 6, "seed": 5,
                "backend": "openai", "results_dir": str(tmp_path),
                "team": {"models": ["good", "gone"] + ["scripted"] * 4, "presets": presets}}
        cfgs = [RunConfig.from_mapping({**data, "seed": seed}) for seed in (5, 6)]
        preflight(cfgs)
        from masgrid._private.platform.sweeps.ray_runs import run_many

        with pytest.raises(Exception, match="stopped answering") as lost:
            run_many(cfgs, max_concurrent=1)
    assert gone.base_url.rstrip("/") in str(lost.value)
    runs = pd.read_parquet(tmp_path / "runs")
    assert len(runs) == 1  # the second run, which calls the lost endpoint too, was held
    run = runs.iloc[0]
    assert run["status"] == "failed" and run["error_class"] == "interrupted"
    assert "stopped answering" in run["error"] and gone.base_url.rstrip("/") in run["error"]
