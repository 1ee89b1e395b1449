"""The no-communication floor of a SILO instance: every agent answers from its own shard alone.

A SILO score measures coordination only above what agents reach without exchanging a
word. `isolated_answers` gives each agent's `SiloSpec.isolated_answer`, passed through the
same text round trip as a submission (format_answer, then parse_answer), so a silent
agent is scored exactly like a real one; `isolated_score` scores them with the task's own
scorer. The SILO adapter records it with every run (`floor_sr`, `floor_pcs`,
`floor_success`), the scripted condition `isolated` runs it through the platform, and
benchmarks/bench_silo_isolated.py tabulates it over N and seeds (docs/tasks/silo-isolated.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from masgrid.families.silo.spec import SiloData, SiloSpec
from masgrid.sdk.tasks import Score

#: the scales and seeds of the floor table (the paper's N grid, 20 instances per cell)
FLOOR_SCALES = (2, 5, 10, 20, 50, 100)
FLOOR_SEEDS = 20


class FloorCell(BaseModel):
    """The isolated baseline on `seeds` instances of one (task, N, k)."""

    task: str
    level: int
    n: int
    k: int
    seeds: int
    sr: float          # mean S (fraction of agents correct), the paper's Success Rate
    success: float     # fraction of instances with S = 1
    pcs: float         # mean P (partial correctness)
    unanswered: float  # fraction of agents whose isolated answer could not be formed or parsed


def isolated_answer_text(spec: SiloSpec, agent: int, n: int, data: SiloData) -> str | None:
    """The submit_result text a silent agent writes, or None when its spec gives no answer.

    An exception is not caught: a silent guess that fails is a bug in the spec, and
    swallowing it would lower the floor and flatter every score measured above it."""
    value = spec.isolated_answer(agent, n, data.shards[agent], data.public)
    return None if value is None else spec.format_answer(value)


def isolated_answers(spec: SiloSpec, data: SiloData) -> list[Any]:
    """Each agent's parsed isolated answer (None: no answer, scored as a missing submission).
    A guess its own task cannot parse is a bug and raises, like a failing guess."""
    n = len(data.shards)
    texts = [isolated_answer_text(spec, agent, n, data) for agent in range(n)]
    return [None if text is None else spec.parse_answer(text, agent, data) for agent, text in enumerate(texts)]


@dataclass(frozen=True)
class IsolatedMarks:
    """The isolated answers' marks on one instance, typed (a Score keeps S, P and the count
    of submissions in its loosely typed `metrics`)."""

    correct: list[bool]
    partial: list[float]
    submitted: int  # agents whose isolated answer could be formed and parsed

    @property
    def sr(self) -> float:
        return sum(self.correct) / len(self.correct)

    @property
    def pcs(self) -> float:
        return sum(self.partial) / len(self.partial)

    @property
    def success(self) -> bool:
        return self.sr == 1.0

    def score(self) -> Score:
        return Score(success=self.success, correct=self.correct, partial=self.partial,
                     metrics={"sr": self.sr, "pcs": self.pcs, "submitted": self.submitted})


def isolated_marks(spec: SiloSpec, data: SiloData) -> IsolatedMarks:
    """The task's own correctness and quality of each isolated answer of one instance."""
    answers = isolated_answers(spec, data)
    correct = [spec.is_correct(a, e, data) for a, e in zip(answers, data.expected)]
    partial = [float(spec.quality(a, e, data)) for a, e in zip(answers, data.expected)]
    return IsolatedMarks(correct=correct, partial=partial, submitted=sum(a is not None for a in answers))


def isolated_score(spec: SiloSpec, data: SiloData) -> Score:
    """The task's own S and P for the isolated answers of one instance."""
    return isolated_marks(spec, data).score()


def floor_cell(task_id: str, n: int, k: int | None = None, seeds: int = FLOOR_SEEDS) -> FloorCell:
    """The isolated baseline on the instances a sweep over seeds 0..seeds-1 would run."""
    from masgrid.families.silo.adapter import SiloTask
    from masgrid.sdk.tasks import get_task

    task = get_task(f"silo/{task_id}")
    if not isinstance(task, SiloTask):
        raise TypeError(f"silo/{task_id} is not a SILO task ({type(task).__name__})")
    k = task.default_k if k is None else k
    srs: list[float] = []
    successes: list[float] = []
    pcss: list[float] = []
    unanswered = 0
    for seed in range(seeds):
        data = task.silo_data(n, k, seed)
        marks = isolated_marks(task.spec, data)
        srs.append(marks.sr)
        successes.append(float(marks.success))
        pcss.append(marks.pcs)
        unanswered += n - marks.submitted
    return FloorCell(task=task_id, level=task.spec.level, n=n, k=k, seeds=seeds, sr=sum(srs) / seeds,
                     success=sum(successes) / seeds, pcs=sum(pcss) / seeds, unanswered=unanswered / (seeds * n))
