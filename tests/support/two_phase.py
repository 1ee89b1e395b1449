"""Two-phase MAS-Bench runs against a loopback model scripted per agent and phase.

A `Plan` says, for every (agent, phase), how many turns the agent spends on a
communication command before it submits, and what it submits: the right block, one of
two wrong ones, or nothing (it talks until R_max). The tests derive their expectations
from the plan and from the requests the server saw, never from masgrid's own numbers.
"""

from __future__ import annotations

import itertools
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path

from masgrid.families.masbench.generator import init_sort_task
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.run_summary import RunSummary
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.support.chat_server import ChatServer, Reply, agent_and_turn, words

ANSWERS = ("right", "wrong_a", "wrong_b", "none")


@dataclass
class Turn:
    waits: int  # turns spent on a communication command before submitting
    answer: str  # one of ANSWERS


@dataclass
class Served:
    agent: int
    phase: int
    prompt_words: int
    reply_words: int


@dataclass
class Plan:
    protocol: str
    condition: str
    n: int
    k: int
    seed: int
    turns: dict[tuple[int, int], Turn]
    mode: str = "random"
    max_rounds: int = 5
    served: list[Served] = field(default_factory=list)
    _phase: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def phases(self) -> int:
        return 2 if self.condition in ("camoc", "abl_message") else 1

    def expected(self) -> list[list[int]]:
        return init_sort_task(self.n, self.k, self.mode, self.seed)[1]

    def answer(self, agent: int, phase: int) -> list[int] | None:
        kind, right = self.turns[agent, phase].answer, self.expected()[agent]
        return {"right": right, "wrong_a": [v + 1 for v in right], "wrong_b": [v + 2 for v in right]}.get(kind)

    def correct(self, agent: int, phase: int) -> bool:
        return self.turns[agent, phase].answer == "right"

    def calls(self, agent: int, phase: int) -> int:
        """Model calls the agent gets in the phase: until it submits, at most R_max."""
        t = self.turns[agent, phase]
        return self.max_rounds if t.answer == "none" else min(t.waits + 1, self.max_rounds)

    def tokens(self, phase: int | None) -> int:
        """Tokens the server reported for one phase (None: the run): its word counts."""
        return sum(s.prompt_words + s.reply_words for s in self.served if phase in (None, s.phase))

    def rounds(self, phase: int | None) -> int:
        """R (eq. 5) of one phase, or of the whole run (an agent's calls over both phases)."""
        phases = range(1, self.phases + 1) if phase is None else [phase]
        return max(sum(self.calls(i, p) for p in phases) for i in range(self.n))

    def sr(self, phase: int) -> float:
        return sum(self.correct(i, phase) for i in range(self.n)) / self.n

    def talk(self, agent: int) -> str:
        peer = (agent + 1) % self.n
        return {"broadcast": f"broadcast_message Agent-{agent} says hello",
                "p2p": f"send_message {peer} hello from Agent-{agent}",
                "kv": f"write_file notes/agent-{agent}\nhello from Agent-{agent}"}[self.protocol]

    def text(self, agent: int, phase: int, turn: int) -> str:
        t = self.turns[agent, phase]
        answer = self.answer(agent, phase)
        if turn < t.waits or answer is None:
            return f"Talking first.\n```\n{self.talk(agent)}\n```"
        return f"Done.\n```\nsubmit_result {answer}\n```"

    def reply(self, request: dict) -> Reply:
        agent, turn = agent_and_turn(request)
        with self._lock:
            if turn == 0:  # a fresh history: the agent's next phase begins
                self._phase[agent] = self._phase.get(agent, 0) + 1
            phase = self._phase[agent]
        text = self.text(agent, phase, turn)
        prompt = sum(words(m.get("content") or "") for m in request["messages"])
        with self._lock:
            self.served.append(Served(agent, phase, prompt, words(text)))
        return Reply(text)

    def config(self, results_dir: Path, base_url: str) -> RunConfig:
        return RunConfig.from_mapping(dict(
            task="sorting", protocol=self.protocol, agents=self.n, k=self.k, mode=self.mode, seed=self.seed,
            condition=self.condition, backend="openai", max_rounds=self.max_rounds, results_dir=str(results_dir),
            preflight=False, execution={"executor": "local"},
            model={"name": "scripted-loopback", "base_url": base_url, "max_retries": 0}))

    def run(self, results_dir: Path) -> RunSummary:
        with ChatServer(self.reply, models=("scripted-loopback",)) as server:
            return run_one(self.config(results_dir, server.base_url))


def random_plan(rng: random.Random, protocol: str, condition: str, seed: int) -> Plan:
    n, k = rng.randint(1, 4), rng.randint(1, 3)
    plan = Plan(protocol=protocol, condition=condition, n=n, k=k, seed=seed, turns={})
    for phase in range(1, plan.phases + 1):
        for agent in range(n):
            answer = rng.choices(ANSWERS, weights=(5, 2, 2, 1))[0]
            plan.turns[agent, phase] = Turn(waits=rng.randint(0, plan.max_rounds - 1), answer=answer)
    return plan


def run_grid(root: Path, conditions: tuple[str, ...], protocols: tuple[str, ...], repeats: int,
             seed: int) -> dict[str, Plan]:
    """`repeats` random plans per (condition, protocol), run into `root`: run_id -> plan."""
    rng = random.Random(seed)
    plans: dict[str, Plan] = {}
    for i, (condition, protocol, _) in enumerate(itertools.product(conditions, protocols, range(repeats))):
        plan = random_plan(rng, protocol, condition, seed=i)
        summary = plan.run(root)
        if summary.status != "ok":
            raise AssertionError(f"run {summary.run_id} ({condition}, {protocol}): {summary.error}")
        plans[summary.run_id] = plan
    return plans
