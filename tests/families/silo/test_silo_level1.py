"""Level I specs: seeded generation, truth re-derived independently, scoring of hand-made answers."""

from __future__ import annotations

import math
import statistics
from functools import reduce
from typing import Any
from collections.abc import Callable

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.silo.catalog import SILO_SPECS

LEVEL1 = [f"I-{i:02d}" for i in range(1, 11)]


def flat(shards: list[list[Any]]) -> list[Any]:
    return [v for shard in shards for v in shard]


def first_match(xs: list[str], pattern: str) -> int:
    hits = [i for i, s in enumerate(xs) if s.find(pattern) >= 0]
    return hits[0] if hits else -1


def plurality(xs: list[str]) -> str:
    tally = {c: xs.count(c) for c in "ABCDE"}
    best = max(tally.values())
    (winner,) = [c for c, v in tally.items() if v == best]  # the top is unique by construction
    return winner


# Independent re-computation of every task's truth from the flat global input.
TRUTH: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    "I-01": lambda xs, p: sorted(xs)[-1],
    "I-02": lambda xs, p: sum(1 for w in xs if w == p["target"]),
    "I-03": lambda xs, p: plurality(xs),
    "I-04": lambda xs, p: first_match(xs, p["pattern"]),
    "I-05": lambda xs, p: len([v for v in xs if v in range(p["lo"], p["hi"] + 1)]),
    "I-06": lambda xs, p: reduce(lambda a, b: a ^ b, xs, 0),
    "I-07": lambda xs, p: statistics.fmean(xs),
    "I-08": lambda xs, p: len(dict.fromkeys(xs)),
    "I-09": lambda xs, p: sorted(xs)[::-1][:p["top_k"]],
    "I-10": lambda xs, p: statistics.pstdev(xs),
}

# A wrong answer far from the truth (q = 0), as text, for the scorer tests.
WRONG: dict[str, Callable[[Any, list[Any]], str]] = {
    "I-01": lambda e, xs: str(e // 2),
    "I-03": lambda e, xs: min("ABCDE", key=xs.count),
    "I-04": lambda e, xs: "-1",
    "I-06": lambda e, xs: str(e ^ 0b111),
    "I-07": lambda e, xs: f"{e + 5:.2f}",
    "I-09": lambda e, xs: "[-1, -2, -3, -4, -5]",
    "I-10": lambda e, xs: f"{e + 5:.2f}",
}

def test_all_ten_registered_with_prompts() -> None:
    assert all(tid in SILO_SPECS for tid in LEVEL1)
    for tid in LEVEL1:
        task = get_task(f"silo/{tid}")
        inst = task.generate(3, 4, 1)
        prompt = task.build_prompt(task.view(inst, 0), "p2p", "base")
        assert "No single agent has sufficient information" in prompt and "$" not in prompt


@pytest.mark.parametrize("tid", LEVEL1)
def test_generation_is_seeded_and_constant_per_agent(tid: str) -> None:
    task = get_task(f"silo/{tid}")
    a, b = task.generate(5, 6, 3), task.generate(5, 6, 3)
    assert a == b
    assert task.generate(5, 6, 4) != a
    for n in (2, 20):
        inst = task.generate(n, 6, 0)
        assert [len(s) for s in inst.inputs] == [6] * n


@pytest.mark.parametrize("tid", LEVEL1)
@pytest.mark.parametrize("n,seed", [(2, 0), (5, 1), (10, 2), (50, 3)])
def test_truth_matches_an_independent_computation(tid: str, n: int, seed: int) -> None:
    task = get_task(f"silo/{tid}")
    inst = task.generate(n, task.default_k, seed)
    truth = TRUTH[tid](flat(inst.inputs), inst.params["public"])
    for expected in inst.expected:
        if isinstance(truth, float):
            assert math.isclose(expected, truth, abs_tol=1e-9)
        else:
            assert expected == truth


def test_any_match_and_vote_are_not_degenerate() -> None:
    task = get_task("silo/I-04")
    firsts = [task.generate(5, 10, s).expected[0] for s in range(30)]
    assert min(firsts) >= 0 and len(set(firsts)) > 20  # always a match, anywhere in the input
    vote = get_task("silo/I-03")
    winners = [vote.generate(5, 20, s).expected[0] for s in range(40)]
    assert set(winners) == set("ABCDE")


@pytest.mark.parametrize("tid", LEVEL1)
def test_scorer_right_partial_wrong(tid: str) -> None:
    task = get_task(f"silo/{tid}")
    spec = task.spec
    inst = task.generate(4, task.default_k, 7)
    truth = inst.expected[0]
    right = spec.format_answer(truth)
    wrong = WRONG.get(tid, lambda e, xs: str(e + 1000))(truth, flat(inst.inputs))
    parse = lambda raw, i=0: task.parse_answer(inst, i, raw)  # noqa: E731
    all_right = task.score(inst, [parse(right, i) for i in range(4)])
    assert all_right.success and all_right.metrics["sr"] == 1.0 and all_right.metrics["pcs"] == 1.0
    half = task.score(inst, [parse(right), parse(right), parse(wrong), None])
    assert not half.success and half.correct == [True, True, False, False]
    assert half.metrics["sr"] == 0.5 and half.partial == [1.0, 1.0, 0.0, 0.0]
    none = task.score(inst, [parse(wrong)] * 4)
    assert not none.success and none.metrics["sr"] == 0.0 and none.metrics["pcs"] == 0.0


def test_tolerance_and_lenient_parsing() -> None:
    task = get_task("silo/I-07")
    inst = task.generate(3, 10, 0)
    e = inst.expected[0]
    assert task.score(inst, [e + 0.009, e - 0.009, round(e, 2)]).success
    assert not task.score(inst, [e + 0.02] * 3).success
    mx = get_task("silo/I-01")
    inst = mx.generate(2, 3, 0)
    assert [mx.parse_answer(inst, 0, raw) for raw in ("42", "[42]", '{"answer": 42}', "42.")] == [42] * 4
    with pytest.raises(ValueError, match="integer"):
        mx.parse_answer(inst, 0, "about forty")
    top = get_task("silo/I-09")
    inst = top.generate(2, 10, 0)
    assert top.parse_answer(inst, 0, str(inst.expected[0][::-1])) == inst.expected[0]  # order-free
    with pytest.raises(ValueError, match="exactly 5"):
        top.parse_answer(inst, 0, "[1, 2]")


def test_oracle_instance_holds_everything() -> None:
    for tid in LEVEL1:
        task = get_task(f"silo/{tid}")
        multi = task.generate(5, 4, 2)
        oracle = task.generate(1, 4, 2, condition="oracle-5")
        assert oracle.n_agents == 1 and oracle.inputs[0]["segments"] == multi.inputs
        assert oracle.expected == [multi.expected[0]]
        prompt = task.build_prompt(task.view(oracle, 0), "p2p", "oracle-5")
        assert "segment 4:" in prompt and "send_message" not in prompt


@pytest.mark.parametrize("tid", sorted(SILO_SPECS))
@pytest.mark.parametrize("protocol", ["p2p", "broadcast", "kv"])
@pytest.mark.parametrize("condition", ["base", "planning", "reminder", "scratchpad"])
def test_prompts_identical_modulo_id_and_data(tid: str, protocol: str, condition: str) -> None:
    """Appendix B: no agent's prompt differs from another's except its id and its shard."""
    import json

    task = get_task(f"silo/{tid}")
    inst = task.generate(3, 4, 0)

    def neutral(i: int) -> str:
        text = task.build_prompt(task.view(inst, i), protocol, condition)
        return text.replace(json.dumps(inst.inputs[i]), "<DATA>").replace(f"Agent-{i},", "Agent-<ID>,")

    assert neutral(0) == neutral(1) == neutral(2)
    assert not any(word in neutral(0).lower() for word in ("you are the leader", "coordinator:", "step 1"))
