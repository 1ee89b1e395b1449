"""Defective dataset files give one DatasetFormatError line naming the file and the record
(issue 25, item 5), written here as small files; the command line prints it as one line."""

from __future__ import annotations

import codecs
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from masgrid.families.simas.datasets import DatasetFormatError, load_questions

GOOD_EKAR = {"id": "e1", "question": "pen : write",
             "choices": {"label": ["A", "B", "C", "D"], "text": ["knife : cut", "book : shelf", "ink : blue", "desk : wood"]},
             "answerKey": "A"}


def _mmlu(tmp_path: Path, rows: list[list[str]], bom: bool = False) -> Path:
    folder = tmp_path / "mmlu" / "test"
    folder.mkdir(parents=True)
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    path = folder / "formal_logic_test.csv"
    path.write_bytes((codecs.BOM_UTF8 if bom else b"") + buf.getvalue().encode())
    return path


def _one_line(exc: pytest.ExceptionInfo[DatasetFormatError], path: Path, record: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and record in text, text
    return text


@pytest.mark.parametrize("answer", ["BC", "AB", "", "a", "E", "ABCD"])
def test_mmlu_answer_must_be_exactly_one_letter(tmp_path: Path, answer: str) -> None:
    path = _mmlu(tmp_path, [["q0", "w", "x", "y", "z", "A"], ["q1", "w", "x", "y", "z", answer]])
    with pytest.raises(DatasetFormatError) as info:
        load_questions("mmlu", str(tmp_path), "formal_logic")
    assert "not one of A, B, C, D" in _one_line(info, path, "line 2")


def test_mmlu_byte_order_mark_is_not_in_the_question(tmp_path: Path) -> None:
    _mmlu(tmp_path, [["Is p, therefore p valid?", "yes", "no", "maybe", "never", "A"]], bom=True)
    (q,) = load_questions("mmlu", str(tmp_path), "formal_logic")
    assert q.text == "Is p, therefore p valid?" and q.answer == "A"


def test_json_byte_order_mark_is_read(tmp_path: Path) -> None:
    (tmp_path / "ekar").mkdir()
    (tmp_path / "ekar" / "validation.json").write_bytes(codecs.BOM_UTF8 + json.dumps([GOOD_EKAR]).encode())
    (q,) = load_questions("ekar", str(tmp_path))
    assert q.text == "pen : write"


@pytest.mark.parametrize(("change", "problem"), [
    ({"choices": None}, "choices must be an object"),
    ({"choices": ["knife : cut", "book : shelf"]}, "got a list"),
    ({"choices": {"label": ["A", "B", "C", "D"], "text": ["x", "y", "z"]}}, "4 labels but 3 texts"),
    ({"choices": {"label": ["A", "B", "C"], "text": ["x", "y", "z", "w"]}}, "3 labels but 4 texts"),
    ({"choices": {"label": ["A", "A", "B", "C"], "text": ["x", "y", "z", "w"]}}, "letters A.. once each"),
    ({"choices": {"label": "ABCD", "text": "wxyz"}}, "must be lists"),
    ({"answerKey": "E"}, "answerKey 'E'"),
    ({"question": ""}, "question must be a non-empty text"),
])
def test_malformed_ekar_record(tmp_path: Path, change: dict, problem: str) -> None:
    bad = {**GOOD_EKAR, "id": "e2", **change}
    if change.get("choices", 0) is None:
        del bad["choices"]
    (tmp_path / "ekar").mkdir()
    path = tmp_path / "ekar" / "validation.json"
    path.write_text(json.dumps([GOOD_EKAR, bad]))
    with pytest.raises(DatasetFormatError) as info:
        load_questions("ekar", str(tmp_path))
    assert problem in _one_line(info, path, "record 1 (id 'e2')")


@pytest.mark.parametrize(("dataset", "folder", "name"), [("ekar", "ekar", "validation.json"),
                                                         ("aime", "aime2025", "a.jsonl"),
                                                         ("aime", "aime2025", "b.json")])
def test_broken_json_names_the_file(tmp_path: Path, dataset: str, folder: str, name: str) -> None:
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / name
    if name.endswith(".jsonl"):
        path.write_text(json.dumps({"problem": "1+1?", "answer": 2}) + "\n" + '{"problem": "2+2?", "answer": 4\n')
        record = "record 1 (line 2)"
    else:
        path.write_text('[{"question": "a : b",\n "choices": {]')
        record = "line 2"
    with pytest.raises(DatasetFormatError) as info:
        load_questions(dataset, str(tmp_path))
    assert "not valid JSON" in _one_line(info, path, record)


def test_record_that_is_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "aime2025").mkdir()
    path = tmp_path / "aime2025" / "a.jsonl"
    path.write_text(json.dumps({"problem": "1+1?", "answer": 2}) + "\n" + json.dumps(["1+1?", 2]) + "\n")
    with pytest.raises(DatasetFormatError) as info:
        load_questions("aime", str(tmp_path))
    assert "not a JSON object" in _one_line(info, path, "record 1")


def test_duplicate_aime_ids_across_files(tmp_path: Path) -> None:
    (tmp_path / "aime2025").mkdir()
    (tmp_path / "aime2025" / "a.jsonl").write_text(json.dumps({"id": "I-1", "problem": "1+1?", "answer": 2}) + "\n")
    second = tmp_path / "aime2025" / "b.jsonl"
    second.write_text(json.dumps({"id": "I-2", "problem": "2+2?", "answer": 4}) + "\n"
                      + json.dumps({"id": "I-1", "problem": "3+3?", "answer": 6}) + "\n")
    with pytest.raises(DatasetFormatError) as info:
        load_questions("aime", str(tmp_path))
    text = _one_line(info, second, "record 1 (id 'I-1')")
    assert "already used by" in text and str(tmp_path / "aime2025" / "a.jsonl") in text


@pytest.mark.parametrize("answer", [True, "x", 2.5, None, "1,000"])
def test_aime_answer_must_be_an_integer(tmp_path: Path, answer: object) -> None:
    (tmp_path / "aime2025").mkdir()
    path = tmp_path / "aime2025" / "a.jsonl"
    path.write_text(json.dumps({"problem": "?", "answer": answer}) + "\n")
    with pytest.raises(DatasetFormatError) as info:
        load_questions("aime", str(tmp_path))
    assert "integer answer" in _one_line(info, path, "record 0")


def test_instance_command_prints_one_line(tmp_path: Path) -> None:
    path = _mmlu(tmp_path, [["q0", "w", "x", "y", "z", "BC"]])
    code = "import sys; from masgrid._private.platform.commands.cli import main; sys.exit(main())"
    out = subprocess.run([sys.executable, "-c", code, "instance", "simas/mmlu", "simas.subject=formal_logic",
                          f"simas.data_dir={tmp_path}", "simas.profiles=pool"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "line 1" in lines[0] and "Traceback" not in out.stderr
