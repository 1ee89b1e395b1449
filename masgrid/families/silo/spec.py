"""The contract of one SILO-Bench task (Table 9), independent of protocols and prompts.

A `SiloSpec` holds what is particular to a task: the seeded generator that shards the
global input, the exact per-agent ground truth, the answer parser, correctness and the
per-agent quality q_i (section 3.3), and the classical solution used by the scripted
policy (share a payload with everyone, then solve from all payloads). The adapter in
this package turns every registered spec into a masgrid `Task` named `silo/<task_id>`;
prompts come from masgrid/families/silo/conf/prompts/silo/tasks/<task_id>.yaml.

Levels: I = aggregation (every agent outputs the same global answer), II = mesh (agent i
outputs the result for its own segment), III = global shuffle (every agent outputs the
complete global answer).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, Field

SILO_SPECS: dict[str, type[SiloSpec]] = {}


def silo_spec(cls: type[SiloSpec]) -> type[SiloSpec]:
    """Class decorator registering a spec under its `task_id` (e.g. "II-11")."""
    if cls.task_id in SILO_SPECS:
        raise ValueError(f"SILO task {cls.task_id} registered twice")
    SILO_SPECS[cls.task_id] = cls
    return cls


class SiloData(BaseModel):
    """One generated instance of a SILO task."""

    shards: list[Any] = Field(description="agent i's private local data (JSON-serialisable)")
    expected: list[Any] = Field(description="agent i's exact expected answer")
    public: dict[str, Any] = Field(default_factory=dict,
                                   description="parameters every agent is told (window size, sizes, ...)")
    meta: dict[str, Any] = Field(default_factory=dict, description="scorer-only facts (never shown to agents)")


class SiloSpec(ABC):
    task_id: ClassVar[str]
    level: ClassVar[int]
    title: ClassVar[str]
    #: per-agent workload kept constant as N grows (section 3.2); `k` overrides it.
    default_k: ClassVar[int] = 8
    #: absolute tolerance for numeric answers (Level I "within tolerance"); 0 = exact.
    tolerance: ClassVar[float] = 0.0
    #: the no-communication ceiling this task promises: the largest mean S (fraction of
    #: agents correct) that an agent answering from its own shard alone may reach, i.e. the
    #: chance level the answer space implies plus a stated margin (docs/tasks/silo-isolated.md).
    #: None = not calibrated yet; tests/families/silo/test_isolated_floor.py checks it.
    chance_sr: ClassVar[float | None] = None

    @abstractmethod
    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        """Shard a fresh global input over n agents (k items each) and compute the truth."""

    @abstractmethod
    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        """Parse a submit_result argument; raise ValueError with an agent-readable message."""

    def is_correct(self, answer: Any, expected: Any, data: SiloData) -> bool:
        if answer is None:
            return False
        if self.tolerance and isinstance(expected, (int, float)) and isinstance(answer, (int, float)):
            return abs(answer - expected) <= self.tolerance
        return answer == expected

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        """q_i in [0, 1]; the defaults follow section 3.3 per level."""
        if answer is None:
            return 0.0
        if self.level == 1:
            return float(self.is_correct(answer, expected, data))
        if self.level == 2:
            return elementwise_fraction(answer, expected)
        return lcs_ratio(answer, expected)

    def format_answer(self, answer: Any) -> str:
        """Text a scripted agent writes after `submit_result` (must round-trip parse_answer)."""
        import json

        return json.dumps(answer)

    # -- classical baseline ----------------------------------------------------------------
    @abstractmethod
    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        """What a scripted agent shares with every other agent (JSON-serialisable)."""

    @abstractmethod
    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        """Agent `agent`'s answer computed from every agent's payload."""

    def ceiling(self, n: int) -> float | None:
        """The no-communication ceiling at N = n (default `chance_sr` at every n). A spec
        where one agent necessarily holds the answer (e.g. the holder of the global maximum)
        may return max(chance_sr, 1/n), saying so in its task page."""
        return self.chance_sr

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """What an agent can answer from its own shard alone, with no communication at all.

        This is the no-communication floor of section 3.1's principle that no single agent
        holds enough information: whatever a silent agent scores is not coordination. The
        default treats the shard as the whole input (the classical solution with this
        agent's payload as the only one); a spec overrides it where a silent agent has an
        obviously better guess (e.g. scaling a local count by n), so the floor is honest.
        """
        return self.solve(0, 1, {0: self.payload(agent, shard, public)}, public)

    # -- failure analysis ------------------------------------------------------------------
    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        """Minimum set of peers whose information `agent` needs before a sound submission.

        Default: everyone else (Levels I and III); Level II specs narrow it to neighbours,
        and a task whose answer can be settled by part of the data (I-04) names that part.
        """
        return set(range(n)) - {agent}

    def knows_answer(self, agent: int, known: set[int], data: SiloData) -> bool:
        """Whether the data of the agents in `known` (including `agent`) settles agent's answer:
        a submission from such a set is not premature (section 5.2). Default: `known` covers
        `required_peers`; a task where several different sets suffice (I-03) overrides it."""
        return self.required_peers(agent, len(data.shards), data) <= known


def elementwise_fraction(answer: Any, expected: list[Any]) -> float:
    """Fraction of positions of the expected segment that the answer gets exactly right."""
    if not isinstance(answer, list) or not expected:
        return float(answer == expected)
    return sum(a == e for a, e in zip(answer, expected)) / len(expected)


def lcs_ratio(answer: Any, expected: list[Any]) -> float:
    """Longest common subsequence of answer and truth, relative to the truth's length."""
    if not isinstance(answer, list) or not expected:
        return float(answer == expected)
    prev = [0] * (len(expected) + 1)
    for a in answer:
        cur = [0]
        for j, e in enumerate(expected):
            cur.append(prev[j] + 1 if a == e else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1] / len(expected)
