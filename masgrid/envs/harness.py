"""The harness contract shared by every command-block protocol (MAS-Bench F.3/F.4).

A model reply is turned into commands by `parse_fenced`; each command is dispatched in
textual order and every outcome becomes one user message for the agent's next turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MSG_MODEL_ERROR = "Environment could not process that step"
MSG_NO_COMMANDS = "No commands detected in last reply."

# Non-greedy, DOTALL: an optional language tag on the opening line is discarded.
_FENCE = re.compile(r"```(?:[^\n`]*\n)?(.*?)```", re.DOTALL)


def parse_fenced(text: str | None) -> list[str]:
    """Every fenced block of a reply, in textual order, trailing newlines stripped."""
    if not text:
        return []
    return [m.group(1).rstrip("\n") for m in _FENCE.finditer(text)]


class CommandError(Exception):
    """A typed, agent-visible error for invalid arguments or refused operations."""


def split_command(block: str) -> tuple[str, str, str]:
    """(verb, rest of the first line, remaining lines) of one command block."""
    stripped = block.strip("\n")
    first, _, body = stripped.partition("\n")
    first = first.strip()
    verb, _, args = first.partition(" ")
    return verb, args.strip(), body


def unknown_command(block: str) -> str:
    verb = split_command(block)[0]
    return f"Unknown command: {verb}"


def command_error(verb: str, exc: BaseException) -> str:
    return f"{verb} -> error: {exc}"


@dataclass
class CommandOutcome:
    """One dispatched command: what the agent sent, what it is told, what it cost."""

    block: str
    verb: str
    reply: str
    ok: bool = True
    communication: bool = False
    messages_sent: int = 0
    deliveries: int = 0
    submitted: Any = None  # the parsed answer when this command recorded a submission
    extra: dict[str, Any] = field(default_factory=dict)
