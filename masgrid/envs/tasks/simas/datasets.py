"""SIMAS question sets, read from local files in their public layouts (nothing is downloaded).

Layouts under `simas.data_dir` (default: the small set we wrote, conf/data/simas):
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
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from masgrid.resources import conf_cached, conf_dir

DATASETS = ("mmlu", "ekar", "aime", "open", "coding")
#: datasets whose final answer is free text, judged against criteria instead of a key
GENERATION = ("open", "coding")
#: Table 3: the MMLU subjects of the paper and their task types
PAPER_SUBJECTS = {"abstract_algebra": "logical reasoning", "formal_logic": "logical reasoning",
                  "philosophy": "fact retrieval", "global_facts": "fact retrieval",
                  "college_physics": "mixed", "college_computer_science": "mixed"}


class DatasetMissing(ValueError):
    """A dataset file is not where the layout says; the message names what to place where."""


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
    return conf_dir() / "data" / "simas"


def data_root(data_dir: str | None) -> Path:
    return default_data_dir() if data_dir is None else Path(data_dir).expanduser()


def _letter(index: int) -> str:
    return "ABCDEFGHIJ"[index]


def _mmlu(root: Path, subject: str) -> list[Question]:
    parquet = sorted((root / "mmlu" / subject).glob("test-*.parquet"))
    csv_path = root / "mmlu" / "test" / f"{subject}_test.csv"
    if parquet:
        import pyarrow.parquet as pq

        rows = [row for path in parquet for row in pq.read_table(path).to_pylist()]
        out = []
        for i, row in enumerate(rows):
            choices, answer = list(row["choices"]), row["answer"]
            if not isinstance(answer, int) or not 0 <= answer < len(choices):
                raise ValueError(f"{parquet[0]}: row {i} has answer {answer!r} for {len(choices)} choices")
            out.append(Question(id=f"mmlu/{subject}/{i}", dataset="mmlu", subject=subject, text=row["question"],
                                choices=choices, answer=_letter(answer)))
        return out
    if not csv_path.exists():
        raise DatasetMissing(f"simas: no MMLU data for subject {subject!r}: place {subject}_test.csv under "
                             f"{root / 'mmlu' / 'test'} or the parquet files under {root / 'mmlu' / subject}")
    out = []
    with csv_path.open(newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.reader(fh)):
            if len(row) != 6 or row[5].strip() not in "ABCD" or not row[5].strip():
                raise ValueError(f"{csv_path}: line {i + 1} is not question,A,B,C,D,answer-letter")
            out.append(Question(id=f"mmlu/{subject}/{i}", dataset="mmlu", subject=subject, text=row[0],
                                choices=row[1:5], answer=row[5].strip()))
    return out


def _records(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _ekar(root: Path) -> list[Question]:
    for split in ("validation", "test", "train"):
        path = root / "ekar" / f"{split}.json"
        if path.exists():
            break
    else:
        raise DatasetMissing(f"simas: no E-KAR data: place validation.json (or test.json, train.json) of "
                             f"ekar_english under {root / 'ekar'}")
    out = []
    for i, rec in enumerate(_records(path)):
        labels, texts = rec["choices"]["label"], rec["choices"]["text"]
        key = rec.get("answerKey")
        if key not in labels:
            raise ValueError(f"{path}: record {i} has answerKey {key!r}, not one of {labels}")
        choices = [texts[labels.index(letter)] for letter in sorted(labels)]
        out.append(Question(id=f"ekar/{rec.get('id', i)}", dataset="ekar", subject="ekar", text=rec["question"],
                            choices=choices, answer=key))
    return out


def _aime(root: Path) -> list[Question]:
    folder = root / "aime2025"
    files = sorted(folder.glob("*.jsonl")) + sorted(folder.glob("*.json"))
    if not files:
        raise DatasetMissing(f"simas: no AIME 2025 data: place the problems as .jsonl or .json (fields problem "
                             f"and answer) under {folder}")
    out = []
    for path in files:
        for i, rec in enumerate(_records(path)):
            text = rec.get("problem", rec.get("question"))
            answer = str(rec.get("answer", "")).strip()
            if not text or not answer.lstrip("-").isdigit():
                raise ValueError(f"{path}: record {i} needs a problem and an integer answer, got {answer!r}")
            qid = rec.get("id", f"{path.stem}-{i}")
            out.append(Question(id=f"aime/{qid}", dataset="aime", subject="aime2025", text=text, answer=str(int(answer))))
    return out


def _generation(root: Path, dataset: str) -> list[Question]:
    folder = root / dataset
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        extra = ", language and constraints" if dataset == "coding" else ""
        raise DatasetMissing(f"simas: no {dataset} questions: place .jsonl files (fields id, category, question, "
                             f"criteria{extra}) under {folder}")
    out = []
    for path in files:
        for i, rec in enumerate(_records(path)):
            try:
                r = GenerationRecord.model_validate(rec)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise ValueError(f"{path}: record {i}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
            if dataset == "coding" and (not r.language or r.constraints is None):
                raise ValueError(f"{path}: record {i}: a coding question needs language and constraints")
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
