"""The prompt fingerprint: a content hash of every prompt text a run's agents can receive.

It enters the run's identity, so editing a prompt file re-runs exactly the grid points whose
prompts changed. It hashes rendered text, not files: an edit to one task's entry of a shared
YAML file changes only that task's fingerprint. What is rendered, for the run's own instance:

- every agent's system prompt of every phase (a later phase's prompt is rendered with the
  agent's expected answer standing in for its previous submission: the fixed wording is
  what matters, the run's own answers differ anyway);
- the round notice of the condition (SILO scaffolds), if any;
- the protocol's opening user messages and its fixed texts (harness replies, retry and
  final-answer templates: `Protocol.fixed_texts`).

Rendering the whole run's prompts costs about 0.1 ms per agent (benchmarks/
bench_sweep_compose.py); results are cached per process by the caller.
"""

from __future__ import annotations

import hashlib
from typing import Any
from collections.abc import Iterator

from masgrid._private.envs.protocols import make_protocol, PROTOCOLS
from masgrid._private.envs.tasks.base import Instance, Task
from masgrid._private.envs.topology import system_prompt


def _opening(task: Task, instance: Instance, protocol: str, condition: str) -> dict[int, list[str]]:
    """The protocol's opening user messages per agent, for this instance."""
    substrate = make_protocol(protocol, instance.n_agents, lambda agent, raw: raw,
                              task.protocol_options(protocol, condition))
    substrate.attach(instance)
    return substrate.opening()


def prompt_texts(task: Task, instance: Instance, protocol: str, condition: str) -> Iterator[str]:
    """Every prompt text of a run, in a fixed order."""
    for phase in range(1, task.phase_count(instance, condition) + 1):
        for agent in range(instance.n_agents):
            previous = instance.expected[agent] if phase > 1 else None
            yield system_prompt(task, task.view(instance, agent, phase=phase, previous=previous), protocol, condition)
    yield task.round_notice(protocol, condition) or ""
    for _agent, messages in sorted(_opening(task, instance, protocol, condition).items()):
        yield from messages
    yield from PROTOCOLS[protocol].fixed_texts()


def first_messages(task: Task, instance: Instance, protocol: str, condition: str) -> list[dict[str, str]]:
    """The messages of the run's first model call with the longest opening: an agent's
    phase-1 system prompt and the protocol's opening user messages (preflight's probe)."""
    opening = _opening(task, instance, protocol, condition)
    best: list[dict[str, str]] = []
    for agent in range(instance.n_agents):
        system = system_prompt(task, task.view(instance, agent, phase=1, previous=None), protocol, condition)
        messages = [{"role": "system", "content": system}]
        messages += [{"role": "user", "content": text} for text in opening.get(agent, [])]
        if sum(len(m["content"]) for m in messages) > sum(len(m["content"]) for m in best):
            best = messages
    return best


def prompt_hash(task: Task, instance: Instance, protocol: str, condition: str) -> str:
    """First 16 hex digits of SHA-256 over the texts, each length-prefixed (no ambiguity)."""
    digest = hashlib.sha256()
    for text in prompt_texts(task, instance, protocol, condition):
        data = text.encode("utf-8", errors="surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:16]


def fingerprint(task: Task, agents: int, k: int, seed: int, protocol: str, condition: str,
                extra: dict[str, Any]) -> str:
    """The prompt hash of the run these generation arguments describe (`extra`: the
    generator's other keywords, as the driver passes them)."""
    return prompt_hash(task, task.generate(agents, k, seed, **extra), protocol, condition)
