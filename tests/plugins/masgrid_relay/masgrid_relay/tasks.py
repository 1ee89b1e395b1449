"""relay/sum: agent i holds k numbers; every agent must submit the sum of all agents' numbers."""

from __future__ import annotations

import random
from typing import Any

from masgrid.task_api import AgentView, GatherThenSubmit, Instance, Score, ScriptedPolicy, Task, register_task

PROMPT = """You are agent {agent} of {n}. You hold these numbers: {numbers}.
Every agent holds its own list. Talk with the others (protocol {protocol}) until you know the
sum of all numbers every agent holds, then submit it with `submit_result <sum>`."""


@register_task
class RelaySum(Task):
    name = "relay/sum"
    family = "relay"
    protocols = ("broadcast", "p2p", "kv")
    default_k = 3
    generation_keys = ()

    def generate(self, agents: int, k: int, seed: int, **extra: Any) -> Instance:
        rng = random.Random(seed)
        high = int(extra.get("high", 99))
        inputs = [[rng.randint(0, high) for _ in range(k)] for _ in range(agents)]
        total = sum(map(sum, inputs))
        return Instance(task=self.name, params={"agents": agents, "k": k, "seed": seed, "high": high,
                                                "lie": int(extra.get("lie", -1))},
                        inputs=inputs, expected=[total] * agents, meta={"total": total})

    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        return PROMPT.format(agent=view.agent, n=view.n_agents, numbers=view.local_input, protocol=protocol)

    def parse_answer(self, instance: Instance, agent: int, raw: str) -> int:
        return int(raw.strip().strip("[]"))

    def score(self, instance: Instance, answers: list[Any]) -> Score:
        correct = [a == e for a, e in zip(answers, instance.expected)]
        off = [abs(a - e) for a, e in zip(answers, instance.expected) if isinstance(a, int)]
        return Score(success=all(correct), correct=list(correct), partial=[float(c) for c in correct],
                     metrics={"sr": sum(correct) / len(correct), "submitted": sum(a is not None for a in answers),
                              "relay_total": instance.meta["total"],
                              "relay_mean_error": sum(off) / len(off) if off else None})

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        return _Policy(view, protocol, seed)


class _Policy(GatherThenSubmit):
    def payload(self) -> Any:
        return sum(self.view.local_input)

    def answer(self, gathered: dict[int, Any]) -> str:
        lie = int(self.view.params.get("lie", -1)) == self.view.agent
        return str(sum(gathered.values()) + (1 if lie else 0))
