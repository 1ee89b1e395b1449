"""Protocol: the command surface agents see, its replies, visibility and accounting.

One implementation per communication substrate, shared by every task. A task plugs in
only its answer parser, which `submit_result` calls; an invalid answer leaves the slot
empty and returns a typed error (MAS-Bench F.4).
"""

from __future__ import annotations

import re
from abc import ABC
from typing import Any, ClassVar
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict
from masgrid._private.envs.channel import Channel
from masgrid._private.envs.harness import (
    MSG_MODEL_ERROR,
    MSG_NO_COMMANDS,
    CommandError,
    CommandGrammar,
    CommandOutcome,
    SplitBlock,
    command_error,
    parse_fenced,
    split_command,
    split_stacked,
    unknown_command,
)

AnswerParser = Callable[[int, str], Any]
"""(agent id, raw submit_result argument) -> parsed answer; raises ValueError if invalid."""

_AGENT_REF = re.compile(r"^(?:agent[-_ ]?)?(\d+)$", re.IGNORECASE)


def agent_name(i: int) -> str:
    return f"Agent-{i}"


MSG_SKIPPED = "not executed: {count} command(s) after {verb} (it ends your turn for this round)"
# One command per block (MAS-Bench D.2); what a block held beyond that is said once, before it runs.
MSG_STACKED = "this block held {count} commands ({verbs}); each ran as its own command, in order"
MSG_IGNORED = "ignored (no command here takes this text): {lines}"
MSG_KEPT = "kept as part of the {verb} value, not executed: lines starting with {verbs}"
MSG_NOTE = "note: {parts}. Put one command in each fenced block."
STACKED_VERB = "stacked"  # verb of the notice outcome, so the events table counts such blocks
_IGNORED_CHARS = 200


class ProtocolOptions(BaseModel):
    """Round semantics a task may ask for; the defaults are MAS-Bench's (appendix E/F).

    SILO-Bench appendix A.5 asks for all six switches flipped (`ProtocolOptions.strict_rounds()`):
    `wait` ends the turn, nothing sent or written in round r is visible before r + 1
    (inboxes filled atomically at round start, SFS reads see the end-of-previous-round
    store plus the reader's own writes), an agent that submitted leaves the round at
    once, submissions have no protocol side effect, broadcasts skip submitted agents, and
    who has submitted is read from the round start (`round_start_roster`: a send is refused
    only if the receiver submitted in an earlier round, and it counts as delivered only if
    the receiver is still active when the round ends), so the order in which the round's
    replies are applied changes nothing.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    wait_ends_turn: bool = False
    next_round_visibility: bool = False
    submit_ends_turn: bool = False
    submit_notice: bool = True
    deliver_to_submitted: bool = True
    round_start_roster: bool = False

    @classmethod
    def strict_rounds(cls) -> ProtocolOptions:
        """Every switch flipped: rounds in which order of application changes nothing."""
        return cls(wait_ends_turn=True, next_round_visibility=True, submit_ends_turn=True,
                   submit_notice=False, deliver_to_submitted=False, round_start_roster=True)


class Protocol(ABC):
    """State machine of one substrate. Not thread-safe: the environment actor serialises."""

    name: ClassVar[str]
    #: verb -> handler method name; every protocol also has `wait` and `submit_result`.
    verbs: ClassVar[dict[str, str]] = {}
    #: verbs whose command text and reply count as communication tokens (appendix C).
    communication_verbs: ClassVar[frozenset[str]] = frozenset()
    #: verbs without arguments: inside a block they start a new command only alone on a line.
    bare_verbs: ClassVar[frozenset[str]] = frozenset()
    #: verbs whose text may continue on the following lines (messages); submit_result is one.
    body_verbs: ClassVar[frozenset[str]] = frozenset()
    #: verbs that own the rest of the block verbatim (a multi-line value).
    verbatim_verbs: ClassVar[frozenset[str]] = frozenset()
    #: whether the substrate routes its messages through `channel` (docs/channel.md); a run
    #: with channel rates on a substrate without it is refused before it starts
    channel_support: ClassVar[bool] = False
    #: the run's unreliable channel (envs/channel.py); None: perfect delivery, nothing drawn
    channel: Channel | None = None
    #: whether a restricted communication graph (`topology`) limits whom a message reaches
    graph_aware: ClassVar[bool] = False

    def __init__(self, n_agents: int, answer_parser: AnswerParser, options: ProtocolOptions | None = None) -> None:
        if n_agents < 1:
            raise ValueError("a protocol needs at least one agent")
        self.n_agents = n_agents
        self.answer_parser = answer_parser
        self.options = options or ProtocolOptions()
        self.round = 0
        self.slots: list[Any] = [None] * n_agents
        self.reset()

    # -- lifecycle -------------------------------------------------------------------------
    def reset(self) -> None:
        """Fresh state for a new phase: no messages, no files, no submissions."""
        self.round = 0
        self.slots = [None] * self.n_agents

    def submitted(self, agent: int) -> bool:
        return self.slots[agent] is not None

    def begin_round(self, round_no: int) -> None:
        """Called once before a round's replies are applied (visibility snapshots)."""
        self.round = round_no

    # -- optional hooks (no-ops for the command-block substrates) -----------------------------
    def attach(self, instance: Any) -> None:
        """Called once with the run's instance, for substrates that need it (graph protocols)."""

    def opening(self) -> dict[int, list[str]]:
        """User messages each agent gets before its first call (none by default)."""
        return {}

    def close_round(self) -> None:
        """Called once after every reply of the round was applied and before the outcomes
        are recorded: a substrate may settle what depends on the whole round (deliveries)."""

    def end_round(self) -> dict[int, list[str]]:
        """Messages delivered to agents after every reply of the round was applied
        (synchronous delivery); they become the agents' next user messages."""
        return {}

    @classmethod
    def fixed_texts(cls) -> tuple[str, ...]:
        """Every fixed text the substrate can show an agent (harness replies, templates); it
        enters the run's prompt fingerprint (envs/tasks/fingerprint.py)."""
        return (MSG_MODEL_ERROR, MSG_NO_COMMANDS, MSG_SKIPPED, MSG_STACKED, MSG_IGNORED, MSG_KEPT, MSG_NOTE)

    @classmethod
    def grammar(cls) -> CommandGrammar:
        """The line grammar `split_stacked` uses to find stacked commands in a block."""
        return CommandGrammar(
            verbs=frozenset({"wait", "submit_result", *cls.verbs}),
            bare=frozenset({"wait"}) | cls.bare_verbs,
            takes_body=frozenset({"submit_result"}) | cls.body_verbs | cls.verbatim_verbs,
            verbatim=cls.verbatim_verbs,
        )

    @classmethod
    def reply_validator(cls, view: Any) -> Callable[[str, str | None], str | None] | None:
        """A check the agent host runs on each completion, (expect, text) -> retry prompt or
        None; a failed check gets one retry in the same round. None: no validation."""
        return None

    # -- the harness loop of Algorithm 2 (lines 6-16) ----------------------------------
    def apply_reply(self, agent: int, text: str | None, error: str | None) -> list[CommandOutcome]:
        """Outcomes of one model reply, one per user message appended to the agent's history."""
        if error is not None:
            return [CommandOutcome(block="", verb="", reply=MSG_MODEL_ERROR, ok=False)]
        blocks = parse_fenced(text)
        if not blocks:
            return [CommandOutcome(block="", verb="", reply=MSG_NO_COMMANDS, ok=False)]
        grammar = self.grammar()
        # (notice or None, command) in textual order: a stacked block's notice precedes its commands.
        steps: list[tuple[CommandOutcome | None, str]] = []
        for block in blocks:
            split = split_stacked(block, grammar)
            notice = self.stacked_notice(block, split)
            steps.extend((notice if k == 0 else None, command) for k, command in enumerate(split.commands))
        outcomes: list[CommandOutcome] = []
        for pos, (notice, command) in enumerate(steps):
            if notice is not None:
                outcomes.append(notice)
            outcome = self.dispatch(agent, command)
            outcomes.append(outcome)
            if pos + 1 < len(steps) and self._ends_turn(outcome):
                # SILO A.5: the rest of the reply is skipped; the agent is told once.
                outcomes.append(CommandOutcome(block="", verb="", ok=False, reply=MSG_SKIPPED.format(
                    count=len(steps) - pos - 1, verb=outcome.verb)))
                break
        return outcomes

    @staticmethod
    def stacked_notice(block: str, split: SplitBlock) -> CommandOutcome | None:
        """The harness note for a block that held more than one command, or text no command
        takes, or command-like lines inside a verbatim value; None for a one-command block."""
        parts: list[str] = []
        if len(split.commands) > 1:
            verbs = ", ".join(split_command(c)[0] for c in split.commands)
            parts.append(MSG_STACKED.format(count=len(split.commands), verbs=verbs))
        if split.ignored:
            lines = " / ".join(split.ignored)
            if len(lines) > _IGNORED_CHARS:
                lines = lines[:_IGNORED_CHARS] + "..."
            parts.append(MSG_IGNORED.format(lines=lines))
        if split.kept_verbs:
            parts.append(MSG_KEPT.format(verb=split_command(split.commands[-1])[0],
                                         verbs=", ".join(dict.fromkeys(split.kept_verbs))))
        if not parts:
            return None
        return CommandOutcome(block=block, verb=STACKED_VERB, reply=MSG_NOTE.format(parts="; ".join(parts)),
                              harness=True)

    def _ends_turn(self, outcome: CommandOutcome) -> bool:
        if outcome.verb == "wait" and self.options.wait_ends_turn:
            return True
        return outcome.submitted is not None and self.options.submit_ends_turn

    def dispatch(self, agent: int, block: str) -> CommandOutcome:
        verb, args, body = split_command(block)
        handler_name = {"wait": "_wait", "submit_result": "_submit", **self.verbs}.get(verb)
        if handler_name is None:
            return CommandOutcome(block=block, verb=verb, reply=unknown_command(block), ok=False)
        outcome = CommandOutcome(block=block, verb=verb, reply="")
        outcome.communication = verb in self.communication_verbs
        try:
            outcome.reply = getattr(self, handler_name)(agent, args, body, outcome)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an agent-visible reply
            outcome.ok = False
            outcome.reply = command_error(verb, exc)
        return outcome

    # -- commands every protocol has --------------------------------------------------
    def _wait(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        return "acknowledged"

    def _submit(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        raw = "\n".join(part for part in (args, body) if part).strip()
        if not raw:
            raise CommandError("missing answer; usage: submit_result <answer>")
        try:
            value = self.answer_parser(agent, raw)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.slots[agent] = value
        out.submitted = value
        recorded = f"recorded {format_answer(value)}"
        side = self.on_submit(agent, value, out) if self.options.submit_notice else ""
        return f"{recorded} | {side}" if side else recorded

    def on_submit(self, agent: int, value: Any, out: CommandOutcome) -> str:
        """The substrate's submission side effect; returns the reply suffix (or '')."""
        return ""

    # -- helpers ------------------------------------------------------------------------
    def parse_agent(self, ref: str) -> int:
        match = _AGENT_REF.match(ref.strip())
        if not match:
            raise CommandError(f"invalid agent id {ref!r}; use an integer such as 3 or Agent-3")
        target = int(match.group(1))
        if not 0 <= target < self.n_agents:
            raise CommandError(f"no such agent: {agent_name(target)} (agents are 0..{self.n_agents - 1})")
        return target


def format_answer(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_answer(v) for v in value) + "]"
    return str(value)
