"""Issue 33, item 6: the cluster in miniature. Model phases checked on real multi-node Ray
clusters on loopback, each started by a separate process (tests/support/cluster_in_miniature.py)
so it never meets this session's Ray; that process writes what it saw as JSON, judged here.

- GH200: four Ray nodes declaring 4 logical GPUs and `accelerator_type:GH200` each (the
  4 x 4 GH200 allocation the presets are sized for). `sweep=masbench` over deepseek_v31,
  qwen3_next_80b and gpt_oss_120b (tp16 each) plans three phases of one model each, every
  model loaded once; Ray itself places each phase's placement groups, made with exactly the
  plan's bundles and strategy, 4 GPU bundles per node as the plan says, and cannot place the
  next phase's while one phase holds the cluster; `masgrid run -m ... --plan` prints the same
  three phases and starts nothing; a team needing two of the models at once is refused with
  the numbers. No engine is started.
- tiny: two Ray nodes of 2 logical CPUs and two presets derived from tiny_cpu that fit one at
  a time; a real `masgrid run -m --config-dir ... backend=serve model=tiny_a,tiny_b` sweep
  runs each model in a phase of its own through the real vLLM CPU engine, is killed with
  SIGKILL inside tiny_a's phase and resumed with the same command (the acceptance sweep of
  model phases). Independent witnesses: Serve's replica placement groups (never both models
  up) and the token counters each engine exports through Ray's metrics agents (the runs table
  must match the engine that served a whole phase token for token: its runs plus the phase's
  one probe).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[4]
GH200 = {"deepseek-v3.1", "qwen3-next-80b-a3b-instruct", "gpt-oss-120b"}


def facts_of(mode: str, tmp_path: Path, timeout: float) -> dict[str, Any]:
    out = tmp_path / f"{mode}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-m", "tests.support.cluster_in_miniature", mode, str(out), str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


def phase_lines(text: str) -> list[tuple[int, str, str]]:
    """(index, models, moves) of each `  phase i: ...` line of a printed plan."""
    return [(int(m[1]), m[2], m[3]) for m in re.finditer(r"^  phase (\d+): (.+?) \((.*)\); \d+ run\(s\)$", text, re.M)]


def test_gh200_presets_run_in_three_phases_placed_by_ray_on_4_nodes_x_4_gpus(tmp_path):
    check_gh200(facts_of("gh200", tmp_path, timeout=600))


def check_gh200(facts: dict[str, Any]) -> None:
    nodes = set(facts["nodes"])
    assert len(nodes) == 4 and facts["cluster_resources"] == {"CPU": 128.0, "GPU": 16.0}
    runs_of: dict[str, set[str]] = {}
    for run_id, model in facts["runs"].items():
        runs_of.setdefault(model, set()).add(run_id)
    assert set(runs_of) == GH200 and all(len(r) == 2 for r in runs_of.values())

    # three phases, one model each, each model loaded exactly once, serving all its runs
    phases = facts["phases"]
    assert [p["index"] for p in phases] == [1, 2, 3]
    assert all(len(p["models"]) == 1 and p["loads"] == p["models"] and not p["keeps"] for p in phases)
    assert {p["models"][0] for p in phases} == GH200 and facts["plan_loads"] == 3
    assert phases[0]["releases"] == [] and all(p["releases"] == q["models"] for q, p in zip(phases, phases[1:]))
    for p in phases:
        assert set(p["runs"]) == runs_of[p["models"][0]]
        assert p["replicas"] == {p["apps"][0]: 1}
        demand = facts["demands"][p["apps"][0]]
        assert demand["strategy"] == "PACK" and len(demand["bundles"]) == 16
        assert sum(b["GPU"] for b in demand["bundles"]) == 16 and demand["ingress"] == {"CPU": 1.0}
        # the plan: TP16 over the 4 nodes, 4 GPU bundles on each; the ingress on a node of the cluster
        planned = Counter(node for app, replica, bundle, node in p["planned"])
        assert planned == {node: 4 for node in nodes}, planned
        assert set(p["planned_ingress"]) == set(p["apps"]) and set(p["planned_ingress"].values()) <= nodes

    # Ray placed each phase's groups, made exactly as the plan reserves them, where the plan says
    for p, seen in zip(phases, facts["placed"]):
        demand = facts["demands"][p["apps"][0]]
        replica, ingress = [g for g in seen["groups"] if g["replica"] == 0], [g for g in seen["groups"] if g["replica"] == -1]
        assert len(replica) == 1 and len(ingress) == 1 and len(seen["groups"]) == 2
        group = replica[0]
        assert group["ready"] and group["state"] == "CREATED" and group["strategy"] == demand["strategy"]
        assert [group["bundles"][str(i)] for i in range(16)] == demand["bundles"]
        landed = Counter(group["bundles_to_node_id"].values())
        planned = Counter(node for app, r, bundle, node in p["planned"])
        # Ray picks which node gets which bundle indices among equivalent nodes: the layout per node is the plan's
        assert landed == planned == {node: 4 for node in nodes}, (landed, planned)
        assert ingress[0]["ready"] and ingress[0]["bundles"] == {"0": demand["ingress"]}
        assert set(ingress[0]["bundles_to_node_id"].values()) <= nodes
        assert seen["left_after_remove"] == 0
        # the cluster as a plan sees it meanwhile: the group's resources taken, and only resources a model asks
        held = seen["cluster_while_held"]
        left = {key: amount for key, amount in held["totals"].items() if amount > 1e-6}
        assert left == pytest.approx({"CPU": 128.0 - 18.0, "accelerator_type:GH200": 4 - 16 * 0.001}), left
        assert "_group_" not in held["describe"], held["describe"]
    # while a phase holds the cluster, Ray cannot place the next phase's model: the phases are needed
    assert [s.get("next_phase_placeable_now") for s in facts["placed"]] == [False, False, None]

    # `masgrid run -m ... --plan` on this cluster: the same three phases, on the live cluster, nothing started
    cli = facts["plan_cli"]
    assert cli["rc"] == 0, cli["stderr"]
    assert "model phases: 3 phase(s), 3 model load(s), 6 pending run(s); cluster: 4 node(s) (free on the cluster)" \
        in cli["stdout"]
    printed = phase_lines(cli["stdout"])
    assert [(i, models) for i, models, _ in printed] == [(p["index"], f"{p['models'][0]} x1") for p in phases]
    assert all(f"load {p['models'][0]}" in moves for p, (_, _, moves) in zip(phases, printed))
    assert facts["after_plan_cli"]["serve_actors"] == [] and facts["after_plan_cli"]["placement_groups"] == 0
    assert facts["serve_actors_at_end"] == []

    # a team needing two of these models at once: refused, with the numbers
    assert facts["team_needs"] == ["deepseek-v3.1", "qwen3-next-80b-a3b-instruct"]
    error = facts["team_error"]
    assert error is not None and error.startswith("a team needs deepseek-v3.1, qwen3-next-80b-a3b-instruct deployed at once")
    assert error.count("= CPU 18, GPU 16") == 2  # each member: 16 GPU workers, the replica actor, the ingress
    assert "4 node(s) (free on the cluster): CPU 128, GPU 16, accelerator_type:GH200 4 in all" in error
    assert "per node CPU 32, GPU 4, accelerator_type:GH200 1" in error


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two engine starts of 40-130 s each on shared cores, then the runs
def test_two_tiny_engines_that_do_not_fit_together_sweep_in_phases_on_two_nodes_through_a_kill(tmp_path):
    from tests.support.engine import engine_missing

    missing = engine_missing()
    if missing:
        pytest.skip(missing)
    t0 = time.monotonic()
    facts = facts_of("tiny", tmp_path, timeout=1800)
    check_tiny(facts, time.monotonic() - t0)


def check_tiny(facts: dict[str, Any], took_s: float) -> None:
    names = {"tiny-a", "tiny-b"}
    assert len(facts["nodes"]) == 2
    plan = facts["plan_cli"]
    assert plan["rc"] == 0, plan["stderr"]
    assert "model phases: 2 phase(s), 2 model load(s), 10 pending run(s); cluster: 2 node(s) (free on the cluster)" \
        in plan["stdout"], plan["stdout"]
    assert [models for _, models, _ in phase_lines(plan["stdout"])] == ["tiny-a x1", "tiny-b x1"]

    # the first command, killed (SIGKILL, its process group) once tiny_a's phase had recorded a
    # run (tests.support.kill.kill_when: a command that ended first fails the support process)
    before = facts["runs_before"]
    assert before and {r["model"] for r in before} == {"tiny-a"} and len(before) < 5, before

    # the same command again resumed it: nothing lost, nothing run twice, what was kept kept
    sweep = facts["sweep"]
    runs = facts["runs"]
    assert sweep["rc"] == 0, sweep["stderr"]
    assert len(runs) == 10 and len({r["run_id"] for r in runs}) == 10, (runs, sweep["stderr"])
    assert sorted(Counter(r["model"] for r in runs).items()) == [("tiny-a", 5), ("tiny-b", 5)]
    assert {r["run_id"] for r in before} <= {r["run_id"] for r in runs}
    # a random model's runs complete with the statuses noise implies, never as platform failures
    assert all(r["status"] in ("ok", "degraded") for r in runs), runs
    # tokens from the server's usage fields: every answered call reported usage, the run's totals are their sums
    for r in runs:
        calls = facts["model_calls"][r["run_id"]]
        assert r["model_calls"] == calls["calls"] > 0 and r["calls_usage_estimated"] == 0
        answered = calls["calls"] - sum(calls["errors"].values())
        assert calls["usage_sources"].get("server") == answered > 0, calls
        assert set(calls["errors"]) <= {"context_length"}, calls  # a random model fills its context, nothing else
        assert r["tokens_in"] == calls["tokens_in"] > 0 and r["tokens_out"] == calls["tokens_out"] > 0

    # over both commands each model was loaded once: the resume kept tiny_a up instead of loading it again
    rows = sorted(facts["phases"], key=lambda r: (r["started_at"], r["phase"]))
    assert sorted(m for r in rows for m in r["loaded"]) == ["tiny-a", "tiny-b"], rows
    assert any("tiny-a" in r["kept"] for r in rows), rows
    assert all(r["failed"] == [] and r["error"] is None and r["runs_held"] == 0 for r in rows), rows
    (load_b,) = [r for r in rows if "tiny-b" in r["loaded"]]
    assert load_b["models"] == ["tiny-b"] and load_b["released"] == ["tiny-a"] and load_b["load_s"] > 1
    assert load_b["runs"] == 5 and load_b["run_s"] > 0
    # tiny_b's phase came after every tiny_a run, and its runs ran inside it
    assert all(r["finished_at"] <= load_b["started_at"] for r in runs if r["model"] == "tiny-a"), (rows, runs)
    for r in runs:
        if r["model"] == "tiny-b":
            assert load_b["started_at"] <= r["started_at"] <= r["finished_at"] <= load_b["ended_at"], (load_b, r)

    # never both deployed at once (Serve's replica placement groups, watched during both commands)
    watch = facts["watch"]
    assert watch["polls"] > 10 and not watch["errors"]
    assert ["tiny-a"] in watch["together"] and ["tiny-b"] in watch["together"]
    assert not any(set(apps) >= names for apps in watch["together"]), watch["together"]
    assert set(watch["nodes"]) == names and all(set(n) <= set(facts["nodes"]) for n in watch["nodes"].values())
    # what Serve LLM asked Ray for is what the plan reserved: one 1.5-CPU bundle per replica, a 1-CPU
    # ingress, which found no room beside the replica and went to the other node
    assert watch["bundles"] == {app: [{"CPU": 1.5}] for app in names}, watch["bundles"]
    assert {app: i["resources"] for app, i in watch["ingress"].items()} == {app: {"CPU": 1.0} for app in names}
    assert all(watch["ingress"][app]["node"] not in watch["nodes"][app] for app in names), watch
    # a plan made after the sweep counts what the models it left deployed hold (replica and ingress) as free
    after = facts["after_sweep"]
    held = sum(2.5 for app in after["managed_apps"] if app in names)
    assert after["free_if_released"].get("CPU") == 4.0, after
    assert after["free"].get("CPU", 0.0) == pytest.approx(4.0 - held), after

    # tiny_b served a whole phase: its engine counted exactly the runs' tokens, the phase's probe
    # and the nudge (one request after the sweep, so that the last engine step's stats are logged)
    probe_b = [p for p in facts["probes"] if p.get("model") == "tiny-b"]
    assert len(probe_b) == 1, facts["probes"]
    nudge = facts["nudge"]
    assert "error" not in nudge, nudge
    samples = watch["counters"]
    final = max((c.get("tiny-b", {}) for c in samples), key=lambda c: c.get("prompt_tokens", 0))
    b = [r for r in runs if r["model"] == "tiny-b"]
    assert final.get("prompt_tokens") == sum(r["tokens_in"] for r in b) + probe_b[0]["prompt_tokens"] \
        + nudge["prompt_tokens"], final
    generated = sum(r["tokens_out"] for r in b) + probe_b[0]["completion_tokens"]
    assert final.get("generation_tokens") in (generated, generated + nudge["completion_tokens"]), (final, generated)
    # tiny_a's engine counted at least what its recorded runs used (the killed run's calls too)
    counted_a = max(c.get("tiny-a", {}).get("prompt_tokens", 0) for c in samples)
    assert counted_a >= sum(r["tokens_in"] for r in runs if r["model"] == "tiny-a")
    print(f"cluster in miniature, tiny: {took_s:.0f} s in all, both commands {facts['sweep_s']:.0f} s")
