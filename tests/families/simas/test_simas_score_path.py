"""`masgrid score` and a run read a SIMAS final reply through one code path: an unparsable
or ambiguous reply is `answer_unparsable` true in both, with the same reason (issue 25)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from masgrid._private.envs.protocols import make_protocol
from masgrid._private.envs.tasks import Instance, get_task
from masgrid._private.platform.commands.task_cli import score_answers

REPLIES = ["I cannot decide.", "The answer is A or B.", "Final answer: E", "", "Final answer: C", "\\boxed{B}",
           "**Final Answer:** D"]


def _instance(agents: int = 1) -> Instance:
    task = get_task("simas/mmlu")
    return task.generate(agents, 1, 0, subject="college_physics", profiles="pool", rounds=1)


def _run_final(instance: Instance, reply: str) -> tuple[object, str]:
    """The group chat protocol as a run drives it: one discussion turn, then the final answer."""
    task = get_task(instance.task)
    protocol = make_protocol("groupchat", instance.n_agents, lambda a, raw: task.parse_answer(instance, a, raw))
    protocol.attach(instance)
    protocol.reset()
    protocol.apply_reply(0, "We should think about it.", None)
    (outcome,) = protocol.apply_reply(0, reply, None)
    return outcome.submitted, outcome.reply


@pytest.mark.parametrize("reply", REPLIES)
def test_score_command_and_run_agree(reply: str) -> None:
    instance = _instance()
    task = get_task(instance.task)
    submitted, said = _run_final(instance, reply)
    in_run = task.score(instance, [submitted])
    on_cli, invalid = score_answers(task, instance, [reply])
    assert on_cli.metrics == in_run.metrics and on_cli.success == in_run.success
    unparsable = bool(in_run.metrics["answer_unparsable"])
    assert unparsable == (0 in invalid) == said.startswith("unparsable")
    if unparsable:
        assert said == f"unparsable: {invalid[0]}" and submitted["reason"] == invalid[0]  # type: ignore[index]
        assert submitted["ambiguous"] == ("A or B" in reply)  # type: ignore[index]


def test_score_command_reports_an_unparsable_reply(tmp_path: Path) -> None:
    """The command itself, as a user runs it: before issue 25 it said answer_unparsable false."""
    inst, answers = tmp_path / "instance.json", tmp_path / "answers.json"
    inst.write_text(_instance(2).model_dump_json())
    answers.write_text(json.dumps(["I cannot decide.", None]))
    code = "import sys; from masgrid._private.platform.commands.cli import main; sys.exit(main())"
    out = subprocess.run([sys.executable, "-c", code, "score", "simas/mmlu", "--instance", str(inst),
                          "--answers", str(answers)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["metrics"] == {"submitted": 1, "answer_unparsable": True, "answer_confidence": None} and result["success"] is False
    assert "no option letter" in result["invalid_answers"]["0"]
