"""Generation questions (simas/open, simas/coding): our JSONL layout, written here, loaded
from simas.data_dir; a missing folder or a bad record is one clear line; the shipped sets
have the sizes of the paper's (15 open-ended, 10 coding: 5 algorithmic, 5 projects)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.simas import prompts
from masgrid.families.simas.datasets import DatasetMissing, load_questions


def write(folder: Path, records: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "set.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")


def test_open_and_coding_layouts(tmp_path: Path) -> None:
    write(tmp_path / "open", [{"id": 7, "category": "energy", "question": "How to share solar?",
                               "criteria": ["Fairness ", "Cost"]}])
    write(tmp_path / "coding", [{"id": "c1", "category": "algorithm", "question": "Sort it.", "language": "Go",
                                 "constraints": ["O(n log n)"], "criteria": ["Correctness"]}])
    (o,), (c,) = load_questions("open", str(tmp_path)), load_questions("coding", str(tmp_path))
    assert (o.id, o.subject, o.criteria, o.answer, o.kind) == ("open/7", "energy", ["Fairness", "Cost"], None, "text")
    assert (c.id, c.language, c.constraints) == ("coding/c1", "Go", ["O(n log n)"])


@pytest.mark.parametrize("dataset", ["open", "coding"])
def test_missing_folder_is_one_line(tmp_path: Path, dataset: str) -> None:
    with pytest.raises(DatasetMissing) as err:
        load_questions(dataset, str(tmp_path))
    assert str(tmp_path / dataset) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("record, problem", [
    ({"id": 1, "category": "x", "question": "q", "criteria": []}, "criteria"),
    ({"id": 1, "category": "x", "question": "q"}, "criteria"),
    ({"id": 1, "category": "x", "question": "q", "criteria": ["a"], "answer": 3}, "answer"),
])
def test_bad_record_is_refused(tmp_path: Path, record: dict, problem: str) -> None:
    write(tmp_path / "open", [record])
    with pytest.raises(ValueError, match=f"record 0: {problem}"):
        load_questions("open", str(tmp_path))


def test_coding_needs_language_and_constraints(tmp_path: Path) -> None:
    write(tmp_path / "coding", [{"id": 1, "category": "x", "question": "q", "criteria": ["a"]}])
    with pytest.raises(ValueError, match="language and constraints"):
        load_questions("coding", str(tmp_path))


def test_shipped_sets() -> None:
    open_, coding = load_questions("open", None), load_questions("coding", None)
    assert len(open_) == 15 and all(len(q.criteria or []) >= 3 for q in open_)
    algorithmic = [q for q in coding if "algorithm" in q.subject]
    assert len(coding) == 10 and len(algorithmic) == 5
    assert len({q.id for q in (*open_, *coding)}) == 25


def test_instance_prompts_and_scoring() -> None:
    task = get_task("simas/coding")
    inst = task.generate(2, 0, 0, question=3, profiles="pool")
    p = inst.params
    assert inst.expected == [None, None] and p["language"] == "Python" and p["criteria"]
    assert "Programming language: Python" in prompts.question_block(p)
    assert "### Final code" in prompts.cot_user({**p, "condition": "cot"})
    assert "complete final answer" in prompts.final_request(p, "")
    text = "def f():\n    return 1"
    assert task.parse_answer(inst, 0, f"  {text}\n") == text
    with pytest.raises(ValueError):
        task.parse_answer(inst, 0, "   ")
    score = task.score(inst, [text, None])
    assert score.success is None and score.correct == [None, None]  # not scored: judged later
    assert task.run_metrics(inst, score, {})["accuracy"] is None
    open_inst = get_task("simas/open").generate(1, 0, 0, question=0, profiles="pool", condition="cot")
    assert "- Originality" in prompts.cot_user(open_inst.params) and "### Final answer" in prompts.cot_user(open_inst.params)
