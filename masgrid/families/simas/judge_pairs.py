"""Which answers `masgrid judge` compares: each usable SIMAS run of a generation question
(condition `base`, every n) with the CoT run of the same model, task, question, seed and
data directory, and the question (with its criteria) they answered."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from masgrid.families.simas.datasets import GENERATION, Question, load_questions

JUDGED_TASKS = tuple(f"simas/{d}" for d in GENERATION)


class Pair(BaseModel):
    model: str
    task: str
    question_id: str
    seed: int
    agents: int
    discussion_rounds: int | None
    simas_run_id: str
    cot_run_id: str
    data_dir: str | None
    simas_answer: str | None
    cot_answer: str | None


def answer_text(raw: Any) -> str | None:
    """Agent 0's recorded submission as text; None when it gave none or it was unusable."""
    if raw is None or (isinstance(raw, float) and pd.isna(raw)):
        return None
    value = json.loads(raw)
    return value if isinstance(value, str) and value.strip() else None


def find_pairs(results_dir: Path, where: dict[str, str]) -> tuple[list[Pair], int]:
    """(pairs of SIMAS and CoT runs, SIMAS runs that have no CoT partner)."""
    from masgrid.sdk.results import load_results, usable

    res = load_results(results_dir)
    runs = res.runs
    if runs.empty:
        raise ValueError(f"judge: no runs recorded under {results_dir}")
    runs = usable(runs[runs["task"].isin(JUDGED_TASKS)])
    if runs.empty:
        return [], 0
    runs = runs.assign(data_dir=[json.loads(c).get("simas", {}).get("data_dir") for c in runs["config_json"]])
    simas = runs[runs["condition"] == "base"]
    for key, value in where.items():  # selects SIMAS runs; each one's CoT partner follows
        if key not in runs.columns:
            raise ValueError(f"judge: --where {key}: no such runs column")
        simas = simas[simas[key].astype(str) == value]
    agents = res.agents
    submissions = dict(zip(zip(agents["run_id"], agents["agent"].astype(int)), agents["submission"]))
    keys = ["model", "task", "question_id", "seed", "data_dir"]
    cot = {tuple(r[k] for k in keys): r for _, r in runs[runs["condition"] == "cot"].iterrows()}
    pairs, unpaired = [], 0
    for _, r in simas.sort_values(["task", "question_id", "seed", "agents"]).iterrows():
        partner = cot.get(tuple(r[k] for k in keys))
        if partner is None:
            unpaired += 1
            continue
        pairs.append(Pair(model=r["model"], task=r["task"], question_id=r["question_id"], seed=int(r["seed"]),
                          agents=int(r["agents"]), discussion_rounds=_int(r.get("discussion_rounds")),
                          simas_run_id=r["run_id"], cot_run_id=partner["run_id"], data_dir=r["data_dir"],
                          simas_answer=answer_text(submissions.get((r["run_id"], _answerer(r)))),
                          cot_answer=answer_text(submissions.get((partner["run_id"], 0)))))
    return pairs, unpaired


def _answerer(run: pd.Series) -> int:
    """The agent whose final answer is the run's output: a_1, or a_n under simas.answer_from=last."""
    return int(run["agents"]) - 1 if run.get("answer_from") == "last" else 0


def _int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def pair_id(pair: Pair, judge_model: str, prompt: str) -> str:
    blob = json.dumps([pair.simas_run_id, pair.cot_run_id, judge_model, prompt])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def question_of(pair: Pair) -> Question:
    dataset = pair.task.split("/", 1)[1]
    for q in load_questions(dataset, pair.data_dir):
        if q.id == pair.question_id:
            return q
    raise ValueError(f"judge: question {pair.question_id} is not in the {dataset} data of {pair.data_dir or 'conf/'}")


