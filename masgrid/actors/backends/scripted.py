"""Scripted backend: a classical policy answering through the text interface.

Usage is estimated with the run's token counter over the full history, the way a server
would bill the same prompt, so TE and CR are defined for classical baselines too.
"""

from __future__ import annotations

import time

from masgrid.actors.backends.base import ChatBackend, Completion, Message
from masgrid.envs.policies import ScriptedPolicy
from masgrid.envs.tokens import TokenCounter


def new_observations(messages: list[Message]) -> list[str]:
    """User messages after the last assistant turn: the harness replies a model would read."""
    out: list[str] = []
    for msg in reversed(messages):
        if msg["role"] == "assistant":
            break
        if msg["role"] == "user":
            out.append(msg["content"])
    return out[::-1]


class ScriptedBackend(ChatBackend):
    def __init__(self, policy: ScriptedPolicy, count: TokenCounter) -> None:
        self.policy = policy
        self.count = count
        self._counts: list[int] = []  # token count of each history message seen so far

    def _prompt_tokens(self, messages: list[Message]) -> int:
        """Sum over the whole history, counting each message once: histories only grow
        within a phase, so long runs (AgentsNet: T calls, 1000 agents) stay linear."""
        if len(messages) < len(self._counts):
            self._counts = []
        self._counts.extend(self.count(m["content"]) for m in messages[len(self._counts):])
        return sum(self._counts)

    async def complete(self, messages: list[Message]) -> Completion:
        start = time.perf_counter()
        text = self.policy.act(new_observations(messages))
        return Completion(
            text=text,
            tokens_in=self._prompt_tokens(messages),
            tokens_out=self.count(text),
            usage_source="estimate",
            latency_s=time.perf_counter() - start,
        )
