"""Tasks end to end without Ray: CLI instance/score, prompts, the classical baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from masgrid._private.envs.tasks import get_task, task_names
from masgrid.families.agentsnet.prompts import variants
from masgrid.families.agentsnet.simulate import run_scripted
from masgrid._private.platform.commands.cli import main

PROBLEMS = ["coloring", "vertex_cover", "matching", "leader_election", "consensus"]


def test_registered() -> None:
    assert {f"agentsnet/{p}" for p in PROBLEMS} <= set(task_names())


@pytest.mark.parametrize("problem", PROBLEMS)
def test_cli_instance_and_score(problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instance", f"agentsnet/{problem}", "agents=8", "graph=ws", "seed=2"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = data["meta"]["names"]
    assert len(names) == 8 and all(u in names and v in names for u, v in data["meta"]["edges"])
    assert data["params"]["rounds"] == (2 * data["meta"]["diameter"] + 1 if problem in ("leader_election", "consensus") else 5)
    # Answer with the scripted baseline given enough rounds, plus one invalid variant.
    task = get_task(f"agentsnet/{problem}")
    inst = task.generate(8, 5, 2, graph="ws", rounds=20)
    answers = run_scripted(task, inst, 0).answers
    (tmp_path / "inst.json").write_text(inst.model_dump_json())
    (tmp_path / "good.json").write_text(json.dumps(answers))
    assert main(["score", f"agentsnet/{problem}", "--instance", str(tmp_path / "inst.json"),
                 "--answers", str(tmp_path / "good.json")]) == 0
    good = json.loads(capsys.readouterr().out)
    assert good["success"] is True and good["metrics"]["soft_score"] == 1.0
    bad = list(answers)
    bad[0] = "Banana"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert main(["score", f"agentsnet/{problem}", "--instance", str(tmp_path / "inst.json"),
                 "--answers", str(tmp_path / "bad.json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["success"] is False and "0" in out["invalid_answers"]


def test_parse_answer_accepts_marker_or_bare_option() -> None:
    task = get_task("agentsnet/consensus")
    inst = task.generate(4, 1, 0, graph="dt")
    assert task.parse_answer(inst, 0, "thinking...\n### Final Answer ### 1") == "1"
    assert task.parse_answer(inst, 0, "0") == "0" and task.parse_answer(inst, 0, '"1"') == "1"
    with pytest.raises(ValueError):
        task.parse_answer(inst, 0, "2")


def test_prompt_parts_and_variants() -> None:
    task = get_task("agentsnet/coloring")
    inst = task.generate(8, 1, 0, graph="ba", byzantine="aware")
    view = task.view(inst, 0)
    base = task.build_prompt(view, "local", "base")
    me = inst.inputs[0]
    assert me["name"] in base and ", ".join(me["neighbors"]) in base
    assert f"{inst.params['rounds']} rounds" in base and f"Group {inst.params['groups']}" in base
    assert len(variants()) == 11
    prompts = {c: task.build_prompt(view, "local", c) for c in variants()}
    assert len(set(prompts.values())) == 11 and all("$" not in p for p in prompts.values())
    adversary = inst.meta["byzantine_agents"][0]
    honest = next(i for i in range(8) if i != adversary and i not in inst.meta["byzantine_agents"])
    assert "make the network fail" in task.build_prompt(task.view(inst, adversary), "local", "base")
    assert "adversaries" in task.build_prompt(task.view(inst, honest), "local", "base")
    unaware = task.generate(8, 1, 0, graph="ba", byzantine="unaware")
    assert "adversaries" not in task.build_prompt(task.view(unaware, honest), "local", "base")


GRID = [(n, g, s) for n in (4, 8, 16) for g in ("ws", "ba", "dt") for s in (0, 1)]


@pytest.mark.parametrize("problem", ["leader_election", "consensus", "vertex_cover"])
def test_baselines_perfect_on_paper_budget(problem: str) -> None:
    task = get_task(f"agentsnet/{problem}")
    results = [run_scripted(task, task.generate(n, 1, s, graph=g), s).score.success for n, g, s in GRID]
    assert all(results)


@pytest.mark.parametrize("problem", ["coloring", "matching"])
def test_baselines_short_budget_imperfect_long_budget_perfect(problem: str) -> None:
    task = get_task(f"agentsnet/{problem}")
    short = [run_scripted(task, task.generate(n, 1, s, graph=g), s).score.success
             for n in (4, 8, 16) for g in ("ws", "ba", "dt") for s in range(4)]
    assert 0 < sum(short) < len(short)
    long = [run_scripted(task, task.generate(n, 1, s, graph=g, rounds=24), s).score.success for n, g, s in GRID]
    assert all(long)
