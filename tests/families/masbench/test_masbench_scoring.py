import pytest

from masgrid._private.envs.tasks import get_task


def test_sorting_score_strict_and_global_check():
    task = get_task("sorting")
    inst = task.generate(3, 2, 0, mode="random")
    exp = inst.expected
    s = task.score(inst, exp)
    assert s.success and s.correct == [True] * 3 and s.metrics["check"] and s.metrics["sr"] == 1
    # one agent wrong, one missing
    wrong = [exp[0], [exp[1][1], exp[1][0]], None]
    s = task.score(inst, wrong)
    assert not s.success and s.correct == [True, False, False]
    assert s.metrics["sr"] == pytest.approx(1 / 3) and s.metrics["check"] is False
    assert s.partial == [1.0, 0.0, 0.0]


def test_check_predicate_is_permutation_equivalent_within_the_multiset():
    task = get_task("sorting")
    inst = task.generate(2, 2, 0, mode="asc")
    assert task.global_check(inst, inst.expected)
    assert not task.global_check(inst, [inst.expected[1], inst.expected[0]])
    assert not task.global_check(inst, [inst.expected[0] + [1], inst.expected[1][:1]])


def test_max_and_prefix_sum_expected_answers():
    mx = get_task("max").generate(4, 3, 5, mode="random")
    top = max(v for x in mx.inputs for v in x)
    assert mx.expected == [[top]] * 4
    ps = get_task("prefix_sum").generate(3, 2, 5, mode="random")
    flat = [v for x in ps.inputs for v in x]
    running = [sum(flat[: i + 1]) for i in range(len(flat))]
    assert ps.expected == [running[0:2], running[2:4], running[4:6]]


def test_answer_parser_accepts_common_list_forms():
    task = get_task("sorting")
    inst = task.generate(2, 3, 0, mode="asc")
    for raw in ("[1, 2, 3]", "1, 2, 3", "1 2 3", " [ 1,2 ,3 ] "):
        assert task.parse_answer(inst, 0, raw) == [1, 2, 3]
    for raw in ("[1, 2]", "[1, 2, 3, 4]", "[1, 2, three]", "1, 2, 3]", "[1, 2, 3.0]"):
        with pytest.raises(ValueError):
            task.parse_answer(inst, 0, raw)
    assert get_task("max").parse_answer(get_task("max").generate(2, 3, 0, mode="asc"), 1, "[42]") == [42]


def test_score_rejects_wrong_number_of_answers():
    task = get_task("sorting")
    with pytest.raises(ValueError):
        task.score(task.generate(2, 2, 0, mode="asc"), [[1, 2]])
