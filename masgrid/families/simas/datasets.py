"""SIMAS question sets, read from local files in their public layouts (nothing is downloaded).

Layouts under `simas.data_dir` (default: the small set we wrote, masgrid/families/simas/conf/data/simas):
- MMLU: either the original CSV distribution, `mmlu/test/<subject>_test.csv` (no header;
  question, four choices, answer letter), or the Hugging Face parquet export,
  `mmlu/<subject>/test-*.parquet` (columns question, choices, answer index).
- E-KAR: `ekar/{validation,test,train}.json` (the first that exists), a JSON list or JSON
  lines of records with `question` ("a : b"), `choices` {label, text} and `answerKey`.
- AIME 2025: `aime2025/*.jsonl` or `*.json`, records with `problem` (or `question`) and an
  integer `answer`.
- Generation questions (section 5, appendix C.2; our own JSONL layout, the columns of
  Tables 5-6): `open/*.jsonl` and `coding/*.jsonl`, records with `id`, `category`,
  `question` and a non-empty `criteria` list; coding records also `language` and
  `constraints` (a list). They have no answer key: a judge compares answers (judge.py).

The paper samples 17 questions per subject (section 4.1); `sample_questions` draws them
with `simas.sample_seed`, fixed across repeats, so all repeats answer the same questions.

Files come from elsewhere (a download, a spreadsheet), so every defect is one
`DatasetFormatError` line naming the file and the record (and the field), never a
traceback: broken JSON, a record that is not an object, an MMLU answer other than exactly
A, B, C or D, an E-KAR record without `choices` or with labels and texts that do not pair
up, a question id used twice (within a file or across the files of a folder). A UTF-8
byte-order mark (a file saved by a spreadsheet) is read as such, not as text.
"""

from __future__ import annotations

import csv
import json
import random
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from masgrid.sdk.resources import conf_cached, conf_file

DATASETS = ("mmlu", "ekar", "aime", "open", "coding")
#: datasets whose final answer is free text, judged against criteria instead of a key
GENERATION = ("open", "coding")
#: Table 3: the MMLU subjects of the paper and their task types
PAPER_SUBJECTS = {"abstract_algebra": "logical reasoning", "formal_logic": "logical reasoning",
                  "philosophy": "fact retrieval", "global_facts": "fact retrieval",
                  "college_physics": "mixed", "college_computer_science": "mixed"}


class DatasetMissing(ValueError):
    """A dataset file is not where the layout says; the message names what to place where."""


class DatasetFormatError(ValueError):
    """A dataset file holds something the layout does not allow; one line naming the file, the
    record (1-based line of a CSV, 0-based index of a JSON record) and what is wrong."""

    def __init__(self, path: Path, record: str | None, problem: str) -> None:
        self.path, self.record, self.problem = path, record, problem
        where = f"{path}: {record}: " if record else f"{path}: "
        super().__init__(" ".join((where + problem).split()))


class Question(BaseModel):
    id: str
    dataset: Literal["mmlu", "ekar", "aime", "open", "coding"]
    subject: str
    text: str
    choices: list[str] | None = None  # None: an integer answer (or free text)
    answer: str | None  # option letter, or the integer as text; None for generation questions
    criteria: list[str] | None = None  # generation questions: what the judge scores
    language: str | None = None  # coding questions
    constraints: list[str] | None = None  # coding questions

    @property
    def kind(self) -> str:
        if self.criteria is not None:
            return "text"
        return "integer" if self.choices is None else "choice"


class GenerationRecord(BaseModel):
    """One line of open/*.jsonl or coding/*.jsonl (our layout, the columns of Tables 5-6)."""

    model_config = ConfigDict(extra="forbid")

    id: str | int
    category: str = Field(min_length=1)
    question: str = Field(min_length=1)
    criteria: list[str] = Field(min_length=1)
    language: str | None = None
    constraints: list[str] | None = None


def default_data_dir() -> Path:
    return conf_file("data/simas")


def data_root(data_dir: str | None) -> Path:
    return default_data_dir() if data_dir is None else Path(data_dir).expanduser()


LETTERS = "ABCDEFGHIJ"


def _letter(index: int) -> str:
    return LETTERS[index]


def _mmlu(root: Path, subject: str) -> list[Question]:
    parquet = sorted((root / "mmlu" / subject).glob("test-*.parquet"))
    csv_path = root / "mmlu" / "test" / f"{subject}_test.csv"
    if parquet:
        import pyarrow.parquet as pq

        out: list[Question] = []
        for path in parquet:
            try:
                rows = pq.read_table(path).to_pylist()
            except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
                raise DatasetFormatError(path, None, f"not a readable parquet file ({type(exc).__name__}: "
                                                     f"{str(exc)[:200]})") from None
            for j, row in enumerate(rows):
                where = f"row {j}"
                missing = [k for k in ("question", "choices", "answer") if k not in row]
                if missing:
                    raise DatasetFormatError(path, where, f"missing column(s) {', '.join(missing)}")
                choices, answer = row["choices"], row["answer"]
                if not isinstance(choices, list) or not 2 <= len(choices) <= 10 \
                        or not all(isinstance(c, str) for c in choices):
                    raise DatasetFormatError(path, where, f"choices must be a list of 2 to 10 texts, got {choices!r:.80}")
                if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices):
                    raise DatasetFormatError(path, where, f"answer {answer!r:.40} is not an index of its "
                                                          f"{len(choices)} choices")
                text = _text(path, where, "question", row["question"])
                out.append(Question(id=f"mmlu/{subject}/{len(out)}", dataset="mmlu", subject=subject, text=text,
                                    choices=list(choices), answer=_letter(answer)))
        return out
    if not csv_path.exists():
        raise DatasetMissing(f"simas: no MMLU data for subject {subject!r}: place {subject}_test.csv under "
                             f"{root / 'mmlu' / 'test'} or the parquet files under {root / 'mmlu' / subject}")
    out = []
    try:
        with csv_path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: a spreadsheet's byte-order mark
            rows = list(csv.reader(fh))
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(csv_path, None, f"not UTF-8 text (byte {exc.start})") from None
    except csv.Error as exc:
        raise DatasetFormatError(csv_path, None, f"not a readable CSV file ({exc})") from None
    for i, row in enumerate(rows):
        where = f"line {i + 1}"
        if not row:
            continue  # a blank line
        if len(row) != 6:
            raise DatasetFormatError(csv_path, where, f"has {len(row)} fields, not question,A,B,C,D,answer-letter")
        answer = row[5].strip()
        if answer not in ("A", "B", "C", "D"):  # exactly one letter: "BC" or "" is not an answer
            raise DatasetFormatError(csv_path, where, f"answer {row[5]!r:.40} is not one of A, B, C, D")
        text = _text(csv_path, where, "question", row[0])
        out.append(Question(id=f"mmlu/{subject}/{len(out)}", dataset="mmlu", subject=subject, text=text,
                            choices=row[1:5], answer=answer))
    return out


def _text(path: Path, where: str, field: str, value: object) -> str:
    """A non-empty text field (a stray byte-order mark stripped), or one error line."""
    if not isinstance(value, str) or not value.replace("\ufeff", "").strip():
        raise DatasetFormatError(path, where, f"{field} must be a non-empty text, got {value!r:.60}")
    return value.replace("\ufeff", "")


def _records(path: Path) -> list[dict]:
    """The records of a JSON list or JSON-lines file, each an object; else one error line."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark is not JSON
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, f"line {exc.lineno} column {exc.colno}", f"not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise DatasetFormatError(path, None, "not valid JSON: nested too deeply") from None
        if not isinstance(data, list):
            raise DatasetFormatError(path, None, "not a JSON list of records")
        records = list(data)
    else:
        records = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetFormatError(path, f"record {len(records)} (line {lineno})",
                                         f"not valid JSON: {exc.msg} at column {exc.colno}") from None
            except RecursionError:
                raise DatasetFormatError(path, f"record {len(records)} (line {lineno})",
                                         "not valid JSON: nested too deeply") from None
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise DatasetFormatError(path, f"record {i}", f"not a JSON object but {type(rec).__name__}")
    return records


def _claim(seen: dict[str, tuple[Path, str]], qid: str, path: Path, where: str) -> None:
    """Record that `qid` comes from (path, where); an id used before is one error naming both."""
    if qid in seen:
        first_path, first_where = seen[qid]
        raise DatasetFormatError(path, where, f"id {qid!r} is already used by {first_path}: {first_where}; "
                                              "question ids must be unique")
    seen[qid] = (path, where)


def _ekar(root: Path) -> list[Question]:
    for split in ("validation", "test", "train"):
        path = root / "ekar" / f"{split}.json"
        if path.exists():
            break
    else:
        raise DatasetMissing(f"simas: no E-KAR data: place validation.json (or test.json, train.json) of "
                             f"ekar_english under {root / 'ekar'}")
    out = []
    seen: dict[str, tuple[Path, str]] = {}
    for i, rec in enumerate(_records(path)):
        where = f"record {i}" + (f" (id {rec['id']!r:.40})" if "id" in rec else "")
        choices_field = rec.get("choices")
        if not isinstance(choices_field, dict) or "label" not in choices_field or "text" not in choices_field:
            got = "missing" if choices_field is None else f"a {type(choices_field).__name__}"
            raise DatasetFormatError(path, where, f"choices must be an object with lists label and text, got {got}")
        labels, texts = choices_field["label"], choices_field["text"]
        if not isinstance(labels, list) or not isinstance(texts, list):
            raise DatasetFormatError(path, where, "choices.label and choices.text must be lists")
        if len(labels) != len(texts):
            raise DatasetFormatError(path, where, f"choices has {len(labels)} labels but {len(texts)} texts")
        if sorted(map(str, labels)) != list(LETTERS[:len(labels)]) or not 2 <= len(labels) <= len(LETTERS):
            raise DatasetFormatError(path, where, f"choices.label must be the letters A.. once each, got {labels!r:.60}")
        if not all(isinstance(t, str) and t.strip() for t in texts):
            raise DatasetFormatError(path, where, "every choices.text must be a non-empty text")
        key = rec.get("answerKey")
        if key not in labels:
            raise DatasetFormatError(path, where, f"answerKey {key!r:.20} is not one of {', '.join(labels)}")
        text = _text(path, where, "question", rec.get("question"))
        choices = [texts[labels.index(letter)] for letter in sorted(labels)]
        qid = f"ekar/{rec.get('id', i)}"
        _claim(seen, qid, path, where)
        out.append(Question(id=qid, dataset="ekar", subject="ekar", text=text, choices=choices, answer=key))
    return out


def _aime(root: Path) -> list[Question]:
    folder = root / "aime2025"
    files = sorted(folder.glob("*.jsonl")) + sorted(folder.glob("*.json"))
    if not files:
        raise DatasetMissing(f"simas: no AIME 2025 data: place the problems as .jsonl or .json (fields problem "
                             f"and answer) under {folder}")
    out = []
    seen: dict[str, tuple[Path, str]] = {}
    for path in files:
        for i, rec in enumerate(_records(path)):
            where = f"record {i}" + (f" (id {rec['id']!r:.40})" if "id" in rec else "")
            raw = rec.get("answer")
            answer = "" if raw is None or isinstance(raw, bool) else str(raw).strip()
            if not re.fullmatch(r"-?\d+", answer):
                raise DatasetFormatError(path, where, f"needs an integer answer, got {raw!r:.40}")
            text = _text(path, where, "problem", rec.get("problem", rec.get("question")))
            qid = f"aime/{rec.get('id', f'{path.stem}-{i}')}"
            _claim(seen, qid, path, where)  # two files with the same ids (a copy, two exports) would collide
            out.append(Question(id=qid, dataset="aime", subject="aime2025", text=text, answer=str(int(answer))))
    return out


def _generation(root: Path, dataset: str) -> list[Question]:
    folder = root / dataset
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        extra = ", language and constraints" if dataset == "coding" else ""
        raise DatasetMissing(f"simas: no {dataset} questions: place .jsonl files (fields id, category, question, "
                             f"criteria{extra}) under {folder}")
    out = []
    seen: dict[str, tuple[Path, str]] = {}
    for path in files:
        for i, rec in enumerate(_records(path)):
            try:
                r = GenerationRecord.model_validate(rec)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise DatasetFormatError(path, f"record {i}", f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
            if dataset == "coding" and (not r.language or r.constraints is None):
                raise DatasetFormatError(path, f"record {i}", "a coding question needs language and constraints")
            _claim(seen, f"{dataset}/{r.id}", path, f"record {i} (id {r.id!r})")
            out.append(Question(id=f"{dataset}/{r.id}", dataset=dataset, subject=r.category, text=r.question,
                                answer=None, criteria=[c.strip() for c in r.criteria], language=r.language,
                                constraints=r.constraints))
    return out


@conf_cached(maxsize=32)
def load_questions(dataset: str, data_dir: str | None, subject: str | None = None) -> tuple[Question, ...]:
    """All questions of a dataset (and MMLU subject), in file order."""
    root = data_root(data_dir)
    if dataset == "mmlu":
        if not subject:
            raise ValueError("simas.subject: simas/mmlu needs an MMLU subject, e.g. simas.subject=college_physics")
        return tuple(_mmlu(root, subject))
    if dataset == "ekar":
        return tuple(_ekar(root))
    if dataset == "aime":
        return tuple(_aime(root))
    if dataset in GENERATION:
        return tuple(_generation(root, dataset))
    raise ValueError(f"unknown SIMAS dataset {dataset!r}; choose one of {', '.join(DATASETS)}")


def sample_questions(questions: tuple[Question, ...], sample: int, sample_seed: int) -> list[Question]:
    """The paper's per-subject sample (all questions when there are fewer), in file order."""
    if len(questions) <= sample:
        return list(questions)
    rng = random.Random(f"simas-sample:{questions[0].dataset}:{questions[0].subject}:{sample_seed}")
    return [questions[i] for i in sorted(rng.sample(range(len(questions)), sample))]
