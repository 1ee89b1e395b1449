"""`masgrid instance` and `masgrid score`, as a user runs them (real subprocesses)."""

import json
import subprocess
import sys

import pytest


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "masgrid.platform.cli", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("task", ["sorting", "max", "prefix_sum"])
def test_instance_then_score_round_trip(tmp_path, task):
    out = cli("instance", task, "agents=3", "k=4", "mode=near_desc", "seed=9", "--json")
    assert out.returncode == 0, out.stderr
    inst = json.loads(out.stdout)
    assert inst["params"] == {"agents": 3, "k": 4, "mode": "near_desc", "seed": 9}
    assert len(inst["inputs"]) == len(inst["expected"]) == 3
    (tmp_path / "inst.json").write_text(out.stdout)

    answers = list(inst["expected"])
    answers[2] = None
    (tmp_path / "ans.json").write_text(json.dumps(answers))
    out = cli("score", task, "--instance", str(tmp_path / "inst.json"), "--answers", str(tmp_path / "ans.json"),
              "--json")
    assert out.returncode == 0, out.stderr
    score = json.loads(out.stdout)
    assert score["success"] is False and score["correct"] == [True, True, False]
    assert score["metrics"]["sr"] == pytest.approx(2 / 3)


def test_score_accepts_agent_keyed_answers_and_reports_invalid_ones(tmp_path):
    inst = json.loads(cli("instance", "sorting", "agents=2", "k=2").stdout)
    (tmp_path / "inst.json").write_text(json.dumps(inst))
    (tmp_path / "ans.json").write_text(json.dumps({"Agent-0": inst["expected"][0], "1": "[1, 2, 3]"}))
    out = cli("score", "sorting", "--instance", str(tmp_path / "inst.json"), "--answers", str(tmp_path / "ans.json"))
    score = json.loads(out.stdout)
    assert score["correct"] == [True, False]
    assert "expected exactly 2 integers" in score["invalid_answers"]["1"]


def test_instance_errors_are_clear():
    out = cli("instance", "sorting", "mode=sideways")
    assert out.returncode == 2 and "mode" in out.stderr
    out = cli("instance", "no_such_task")
    assert out.returncode == 2 and "unknown task" in out.stderr
