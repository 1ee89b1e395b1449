import pytest

from masgrid.envs.tasks import get_task

CONDITIONS = ["base", "abl_message", "abl_submit", "camoc"]


def normalise(prompt: str, view) -> str:
    """Remove what may legitimately differ between agents: the id and the data."""
    out = prompt.replace(str(view.local_input).replace(" ", ""), "<DATA>")
    out = out.replace("[" + ", ".join(map(str, view.local_input)) + "]", "<DATA>")
    return out.replace(f"You are Agent-{view.agent},", "You are Agent-<ME>,")


@pytest.mark.parametrize("task_name", ["sorting", "max", "prefix_sum"])
@pytest.mark.parametrize("protocol", ["broadcast", "p2p", "kv"])
@pytest.mark.parametrize("condition", CONDITIONS)
def test_prompts_structurally_identical_modulo_id_and_data(task_name, protocol, condition):
    task = get_task(task_name)
    inst = task.generate(4, 3, "random", 0)
    prompts = set()
    for i in range(4):
        view = task.view(inst, i)
        prompt = task.build_prompt(view, protocol, condition)
        assert f"You are Agent-{i}," in prompt
        assert "check_results" in prompt
        prompts.add(normalise(prompt, view))
    assert len(prompts) == 1


def test_camoc_inserts_three_clauses_and_drops_expectations_bullet():
    task = get_task("sorting")
    inst = task.generate(3, 2, "asc", 0)
    view = task.view(inst, 0)
    short = task.build_prompt(view, "kv", "base")
    camoc = task.build_prompt(view, "kv", "camoc")
    assert "what you expect the other agents to do next" in short
    assert "what you expect the other agents to do next" not in camoc
    for title in ("Mind your own part", "Answer requests first", "Read everything, then act"):
        assert title not in short and title in camoc
    # clauses sit between the early-submission rule and the submit lock
    assert camoc.index("Do not submit too early") < camoc.index("Mind your own part") < camoc.index("Submitting is final")
    assert task.build_prompt(view, "kv", "abl_submit") == camoc  # same prompt, one phase
    assert task.build_prompt(view, "kv", "abl_message") == short


def test_rerun_addendum_only_in_phase_two_of_two_phase_conditions():
    task = get_task("sorting")
    inst = task.generate(3, 2, "asc", 0)
    v2 = task.view(inst, 1, phase=2, previous=[11, 12])
    camoc2 = task.build_prompt(v2, "broadcast", "camoc")
    assert "second attempt" in camoc2 and camoc2.count("[11, 12]") == 2
    v_none = task.view(inst, 1, phase=2, previous=None)
    assert "you did not submit" in task.build_prompt(v_none, "broadcast", "abl_message")
    assert "second attempt" not in task.build_prompt(task.view(inst, 1), "broadcast", "camoc")
    assert [task.phases(c) for c in CONDITIONS] == [1, 2, 1, 2]


def test_prompt_contains_only_own_data():
    task = get_task("sorting")
    inst = task.generate(3, 4, "random", 0)
    prompt = task.build_prompt(task.view(inst, 0), "p2p", "base")
    for other in inst.inputs[1:]:
        assert not any(f" {v}," in prompt or f"[{v}," in prompt for v in other if v not in inst.inputs[0])
