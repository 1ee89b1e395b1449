"""E-KAR prompts state the task: find the query pair's relation, pick the option with the same one."""

from __future__ import annotations

from masgrid._private.envs.protocols import make_protocol
from masgrid._private.envs.tasks import Instance, get_task
from masgrid.families.simas import prompts


def _first_turn(instance: Instance) -> str:
    task = get_task(instance.task)
    protocol = make_protocol("groupchat", instance.n_agents, lambda a, raw: task.parse_answer(instance, a, raw))
    protocol.attach(instance)
    protocol.reset()
    (text,) = protocol.opening()[0]
    return text


def _states_the_task(text: str, query: str) -> bool:
    low = " ".join(text.lower().split())
    return ("analogy" in low and "relation" in low and "same relation" in low and "in the same order" in low
            and f"({query})" in text)


def test_discussion_and_cot_prompts_state_the_analogy_task() -> None:
    task = get_task("simas/ekar")
    inst = task.generate(3, 1, 0, profiles="pool")
    query = inst.params["question"]
    assert _states_the_task(_first_turn(inst), query)
    cot = task.generate(1, 1, 0, profiles="pool", condition="cot")
    assert _states_the_task(prompts.cot_user(cot.params), query)
    assert "Final answer: <letter>" in prompts.cot_user(cot.params)


def test_other_datasets_keep_their_instruction() -> None:
    mmlu = get_task("simas/mmlu").generate(2, 1, 0, subject="college_physics", profiles="pool")
    text = _first_turn(mmlu)
    assert "analogy" not in text.lower() and prompts.texts()["answer_format_choice"] in text
