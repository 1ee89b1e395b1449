"""In-process run of the scripted baselines on the LOCAL protocol (no Ray, no driver).

Same protocol, prompts, validation and round budget as a platform run, minus actors and
recording, so Tables 9 and 10 (thousands of runs) take seconds; `masgrid run
backend=scripted` gives the same answers through the full stack (tests check this).
"""

from __future__ import annotations

from dataclasses import dataclass

from masgrid.families.agentsnet.local_protocol import LocalProtocol
from masgrid.sdk.tasks import Instance, Score, Task


@dataclass
class ScriptedOutcome:
    answers: list[str | None]
    score: Score
    calls: int


def agent_seed(seed: int, agent: int) -> int:
    """The per-agent policy seed the agent host uses (AgentHost.start_phase)."""
    return seed * 100_003 + agent


def run_scripted(task: Task, instance: Instance, seed: int) -> ScriptedOutcome:
    n = instance.n_agents
    protocol = LocalProtocol(n, lambda agent, raw: task.parse_answer(instance, agent, raw))
    protocol.attach(instance)
    policies = [task.scripted_policy(task.view(instance, i), "local", agent_seed(seed, i)) for i in range(n)]
    pending = protocol.opening()
    calls = task.round_limit(instance, 0)
    for round_no in range(1, calls + 1):
        protocol.round = round_no
        replies = [policies[i].act(pending.get(i, [])) for i in range(n)]
        for i, text in enumerate(replies):
            if not isinstance(text, str):  # a ToolReply: the LOCAL protocol reads text only
                raise TypeError(f"agent {i}'s scripted policy called tools; the LOCAL protocol takes text replies")
            protocol.apply_reply(i, text, None)
        pending = protocol.end_round()
    answers = list(protocol.slots)
    return ScriptedOutcome(answers=answers, score=task.score(instance, answers), calls=calls)
