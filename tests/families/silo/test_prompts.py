"""SILO prompts say what each level asks: Level II agents answer for their own part, the
oracle's example has the oracle's format, II-17's stop numbers are the instance's."""

from __future__ import annotations

import json
import re

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.silo import prompts
from masgrid.families.silo.catalog import SILO_SPECS  # every level registered

SHARED = ("same, complete answer", "globally correct answer")


def agent_prompt(task_id: str, n: int = 3, agent: int = 1, protocol: str = "p2p") -> str:
    task = get_task(f"silo/{task_id}")
    inst = task.generate(n, task.default_k, 0)
    return task.build_prompt(task.view(inst, agent), protocol, "base")


@pytest.mark.parametrize("task_id", sorted(SILO_SPECS))
def test_goal_matches_the_level(task_id: str) -> None:
    text = agent_prompt(task_id)
    assert "No single agent has sufficient information" in text  # appendix B, every level
    if SILO_SPECS[task_id].level == 2:
        assert not any(phrase in text for phrase in SHARED)
        assert "correct answer for its own part" in text and "answers differ" in text
    else:
        assert all(phrase in text for phrase in SHARED)
    assert "$" not in text.replace("$$", "")


def test_level_of_task_ids() -> None:
    assert [prompts.level_of(t) for t in ("I-01", "II-17", "III-30")] == [1, 2, 3]
    with pytest.raises(ValueError, match="not a SILO task id"):
        prompts.level_of("IV-31")


def _example(prompt: str) -> str:
    return re.findall(r"submit_result (.+)", prompt)[-1]


def _depth(value: object) -> int:
    return 1 + max((_depth(v) for v in value), default=0) if isinstance(value, list) else 0


@pytest.mark.parametrize("task_id", sorted(SILO_SPECS))
def test_oracle_example_has_the_oracle_answer_shape(task_id: str) -> None:
    """Level II: the example is a list of one segment answer per segment and parses with the
    oracle's own parser on a 3-segment, k=2 instance (the example's size). Levels I and III:
    the oracle is told the agents' format; its example parses (Level I) or has the nesting of
    the true answer (Level III, whose examples are shorter than a real instance)."""
    task = get_task(f"silo/{task_id}")
    level = SILO_SPECS[task_id].level
    k = 2 if level == 2 else task.default_k
    oracle = task.generate(1, k, 0, condition="oracle-3")
    prompt = task.build_prompt(task.view(oracle, 0), "p2p", "oracle-3")
    example = _example(prompt)
    if level == 3:
        truth = oracle.expected[0]
        assert _depth(json.loads(example)) == _depth(truth), (example, truth)
        return
    parsed = task.parse_answer(oracle, 0, example)
    if level == 2:
        assert isinstance(parsed, list) and len(parsed) == 3 and all(len(seg) == 2 for seg in parsed)


def test_level2_oracle_needs_its_own_format(monkeypatch: pytest.MonkeyPatch) -> None:
    original = prompts.task_text

    def without_oracle(task_id: str) -> dict:
        return {key: value for key, value in original(task_id).items() if key != "oracle_answer_format"}

    monkeypatch.setattr(prompts, "task_text", without_oracle)
    with pytest.raises(ValueError, match="needs oracle_answer_format"):
        prompts.build_oracle_prompt("II-11", 2, 3, 2, [[1, 2]] * 3, {"n": 3, "k": 2, "length": 6})


@pytest.mark.parametrize("n,k,seed", [(2, 4, 0), (3, 8, 1), (5, 3, 2), (7, 6, 3)])
def test_ii17_stop_numbers_match_the_instance(n: int, k: int, seed: int) -> None:
    """The numbers the prompt states (stop range, agent 0's stops, end of line, rides of k to
    2k stops) bound every trip of the instance, and the instance reaches them."""
    task = get_task("silo/II-17")
    inst = task.generate(n, k, seed)
    text = task.build_prompt(task.view(inst, 0), "p2p", "base")
    stops, last = map(int, re.search(r"past (\d+) stops, numbered 0 to (\d+)\.", text).groups())
    first_group_end = int(re.search(r"Agent 0 is responsible for stops 0 to (\d+),", text).group(1))
    end_of_line = int(re.search(r"a trip with leave = (\d+) stays", text).group(1))
    assert (stops, last, first_group_end, end_of_line) == (n * k, n * k - 1, k - 1, n * k)
    for agent, trips in enumerate(inst.inputs):
        for passengers, board, leave in trips:
            assert agent * k <= board <= min(agent * k + first_group_end, last)
            assert board < leave <= end_of_line and leave - board <= 2 * k  # rides of k..2k stops,
            assert leave - board >= k or leave == end_of_line  # cut short only by the end of line
