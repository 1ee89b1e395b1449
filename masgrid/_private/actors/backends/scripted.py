"""Scripted backend: a classical policy answering through the text interface.

Usage is estimated with the run's token counter over the full history, the way a server
would bill the same prompt, so TE and CR are defined for classical baselines too.

A policy may also call tools: its `act` then returns a `ToolReply` (envs/tool_calls.py)
and the completion carries those calls, checked like a model's (unknown tool, arguments
not an object). Tool results reach the policy as observations, like harness replies.
"""

from __future__ import annotations

import time
from typing import Any

from masgrid._private.actors.backends.base import ChatBackend, Completion, Message
from masgrid._private.actors.backends.chat_tools import message_text, tools_text, turn_of
from masgrid._private.envs.policies import ScriptedPolicy
from masgrid._private.envs.tokens import TokenCounter
from masgrid._private.envs.tool_calls import ToolCall, ToolReply, call_id, checked_call, tool_names, with_calls

#: the history roles whose messages a policy reads: harness replies (user) and tool results
OBSERVED_ROLES = ("user", "tool")


def new_observations(messages: list[Message]) -> list[str]:
    """User and tool messages after the last assistant turn: what a model would read next."""
    out: list[str] = []
    for msg in reversed(messages):
        if msg["role"] == "assistant":
            break
        if msg["role"] in OBSERVED_ROLES:
            out.append(str(msg.get("content") or ""))
    return out[::-1]


def policy_calls(reply: ToolReply, tools: list[dict[str, Any]] | None, turn: int) -> list[ToolCall] | None:
    """A policy's calls as a model's would arrive: ids assigned where it left them out, each
    checked against the tools offered."""
    offered = tool_names(tools)
    calls = [checked_call(c.id or call_id(turn, k), c.name, c.raw_arguments, offered)
             for k, c in enumerate(reply.tool_calls)]
    return calls or None


class ScriptedBackend(ChatBackend):
    def __init__(self, policy: ScriptedPolicy, count: TokenCounter) -> None:
        self.policy = policy
        self.count = count
        self._counts: list[int] = []  # token count of each history message seen so far
        self._tools: tuple[str, int] = ("", 0)  # the last tool specs' text and its token count

    def _prompt_tokens(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> int:
        """Sum over the whole history, counting each message once: histories only grow
        within a phase, so long runs (AgentsNet: T calls, 1000 agents) stay linear.
        Offered tools count as prompt on every call, as a server bills them."""
        if len(messages) < len(self._counts):
            self._counts = []
        self._counts.extend(self.count(message_text(m)) for m in messages[len(self._counts):])
        spec = tools_text(tools)
        if spec != self._tools[0]:
            self._tools = (spec, self.count(spec) if spec else 0)
        return sum(self._counts) + self._tools[1]

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        start = time.perf_counter()
        reply = self.policy.act(new_observations(messages))
        calls = None
        if isinstance(reply, ToolReply):
            calls = policy_calls(reply, tools, turn_of(messages))
            reply = reply.text
        return Completion(
            text=reply,
            tool_calls=calls,
            tokens_in=self._prompt_tokens(messages, tools),
            tokens_out=self.count(with_calls(reply, calls) or ""),
            usage_source="estimate",
            latency_s=time.perf_counter() - start,
        )
