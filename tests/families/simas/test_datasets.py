"""Loaders on files written here in the public layouts, and a clear error for a missing one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from masgrid.families.simas.datasets import DatasetMissing, load_questions, sample_questions


def test_mmlu_csv(tmp_path: Path) -> None:
    folder = tmp_path / "mmlu" / "test"
    folder.mkdir(parents=True)
    with (folder / "formal_logic_test.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["Is p, therefore p valid?", "yes", "no", "only if p", "never", "A"])
        writer.writerow(["Which, of these, is a connective?", "and", "cat", "blue", "seven", "A"])
    qs = load_questions("mmlu", str(tmp_path), "formal_logic")
    assert [q.answer for q in qs] == ["A", "A"]
    assert qs[1].text == "Which, of these, is a connective?" and qs[1].choices == ["and", "cat", "blue", "seven"]


def test_mmlu_parquet(tmp_path: Path) -> None:
    folder = tmp_path / "mmlu" / "global_facts"
    folder.mkdir(parents=True)
    table = pa.table({"question": ["q0", "q1"], "subject": ["global_facts"] * 2,
                      "choices": [["a", "b", "c", "d"], ["e", "f", "g", "h"]], "answer": [3, 1]})
    pq.write_table(table, folder / "test-00000-of-00001.parquet")
    qs = load_questions("mmlu", str(tmp_path), "global_facts")
    assert [(q.text, q.answer) for q in qs] == [("q0", "D"), ("q1", "B")]


@pytest.mark.parametrize("lines", [False, True])
def test_ekar_json_and_jsonl(tmp_path: Path, lines: bool) -> None:
    recs = [{"id": "x1", "question": "a : b", "choices": {"label": ["A", "B", "C", "D"], "text": ["1", "2", "3", "4"]},
             "answerKey": "C"}]
    (tmp_path / "ekar").mkdir()
    text = "\n".join(json.dumps(r) for r in recs) if lines else json.dumps(recs)
    (tmp_path / "ekar" / "validation.json").write_text(text)
    (q,) = load_questions("ekar", str(tmp_path))
    assert q.answer == "C" and q.choices == ["1", "2", "3", "4"] and q.id == "ekar/x1"


def test_aime_both_field_names(tmp_path: Path) -> None:
    (tmp_path / "aime2025").mkdir()
    (tmp_path / "aime2025" / "aime2025-I.jsonl").write_text(
        json.dumps({"question": "1+1?", "answer": "2"}) + "\n" + json.dumps({"problem": "2+3?", "answer": 5}) + "\n")
    qs = load_questions("aime", str(tmp_path))
    assert [(q.text, q.answer, q.choices) for q in qs] == [("1+1?", "2", None), ("2+3?", "5", None)]


@pytest.mark.parametrize(("dataset", "subject", "where"), [("mmlu", "philosophy", "philosophy_test.csv"),
                                                           ("ekar", None, "validation.json"),
                                                           ("aime", None, "aime2025")])
def test_missing_file_names_what_to_place_where(tmp_path: Path, dataset: str, subject: str | None, where: str) -> None:
    with pytest.raises(DatasetMissing, match=where) as info:
        load_questions(dataset, str(tmp_path), subject)
    assert "\n" not in str(info.value) and str(tmp_path) in str(info.value)


def test_bad_answer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "aime2025").mkdir()
    (tmp_path / "aime2025" / "a.jsonl").write_text(json.dumps({"problem": "?", "answer": "x"}) + "\n")
    with pytest.raises(ValueError, match="integer answer"):
        load_questions("aime", str(tmp_path))


def test_shipped_data_and_sample() -> None:
    mc = sum(len(load_questions("mmlu", None, s)) for s in ("college_physics", "abstract_algebra"))
    assert mc + len(load_questions("ekar", None)) == 30
    assert len(load_questions("aime", None)) == 10
    qs = load_questions("mmlu", None, "college_physics")
    a, b = sample_questions(qs, 4, 0), sample_questions(qs, 4, 0)
    assert a == b and len(a) == 4 and sample_questions(qs, 4, 1) != a
    assert sample_questions(qs, 17, 0) == list(qs)  # fewer than 17: all of them
