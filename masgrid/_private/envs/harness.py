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


@dataclass(frozen=True)
class CommandGrammar:
    """How a protocol's verbs may span lines, for telling stacked commands apart from bodies.

    `bare` verbs take no argument and start a new command only when alone on their line;
    every other verb starts one when it is the first word of a line. `takes_body` verbs may
    continue on following lines (a message, an answer); `verbatim` verbs own the rest of the
    block as their value, whatever it looks like (MAS-Bench E.4's multi-line write).
    """

    verbs: frozenset[str]
    bare: frozenset[str] = frozenset()
    takes_body: frozenset[str] = frozenset()
    verbatim: frozenset[str] = frozenset()

    def starts_command(self, line: str) -> bool:
        """Whether `line` (not the block's first) is unambiguously a command of its own."""
        text = line.strip()
        word = text.split(None, 1)[0] if text else ""
        if word not in self.verbs:
            return False
        return text == word if word in self.bare else True


@dataclass
class SplitBlock:
    """One fenced block cut into its commands, with what it held besides them."""

    commands: list[str]
    ignored: list[str] = field(default_factory=list)  # text lines no command takes
    kept_verbs: list[str] = field(default_factory=list)  # command-like lines kept inside a verbatim value


def split_stacked(block: str, grammar: CommandGrammar) -> SplitBlock:
    """Cut a block at every line that starts a command (see `CommandGrammar`).

    The paper's contract is one command per block; models stack several anyway, so each
    is executed as its own command and the caller tells the agent. The first line always
    opens a command (an unknown verb keeps its lines, to be reported whole).
    """
    lines = block.strip("\n").split("\n")
    groups: list[list[str]] = [[lines[0]]]
    kept: list[str] = []
    verbatim = split_command(lines[0])[0] in grammar.verbatim
    for line in lines[1:]:
        if verbatim:
            if grammar.starts_command(line):
                kept.append(line.split(None, 1)[0])
            groups[-1].append(line)
        elif grammar.starts_command(line):
            groups.append([line])
            verbatim = split_command(line)[0] in grammar.verbatim
        else:
            groups[-1].append(line)
    out = SplitBlock(commands=[])
    for group in groups:
        verb = split_command(group[0])[0]
        if verb in grammar.verbs and verb not in grammar.takes_body:
            out.ignored.extend(line.strip() for line in group[1:] if line.strip())
            group = group[:1]
        out.commands.append("\n".join(group))
    out.kept_verbs = kept
    return out


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
    harness: bool = False  # a harness note about the reply (events kind harness), not a command
    extra: dict[str, Any] = field(default_factory=dict)
