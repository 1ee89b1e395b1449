"""The shared group chat of SIMAS (Algorithm 1): who speaks next and what each speaker sees.

The protocol owns the turn order; the `sequential` scheduler calls whichever agent it
hands a message (`end_round` delivers exactly one, or none when the phase is over):

- discussion phase: rounds t = 1..T, agents a_1..a_n in order; a speaker's message holds
  (on its first turn) the question, then every reply it has not yet seen, attributed by
  name and in order. Its own earlier replies are already in its history. After round T
  the answering agent (a_1; a_n with `simas.answer_from=last`) gets everything since its
  last turn plus the request for the final answer, which is parsed (`submitted` is the
  parsed answer, or the `unparsable` marker with the reason, also for a reply naming several
  answers; `final_submission`, which `masgrid score` uses too);
- profile phase (`simas.profiles=generate`, before the discussion): agent a_1 is asked for
  the n profiles once; a reply that fails the check gets one retry from the agent host
  (`reply_validator`), and if that fails too the pool's profiles are used with the flag
  `pool_fallback`. Every agent's slot then holds its profile, which the next phase's
  system prompt reads (`AgentView.previous`);
- condition `cot`: one agent, one call with the chain-of-thought prompt, parsed as final.

A failed model call leaves a marked empty turn in the history; the discussion goes on.

Through an unreliable channel (masgrid's `channel:` block, docs/channel.md) each discussion
utterance is one message from its speaker to each other agent, due at the listener's turn in
the utterance's round (listeners who speak later in that round) or the next one: a lost one
never reaches that listener, a delayed one is shown from the listener's first turn in round
t + d (the final answer's turn counts as round T + 1; later ones are never shown), a
duplicated one is shown twice, a reordered one before the other new entries of that turn.
A failed turn's marker is no message and reaches everyone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from masgrid.families.simas import prompts
from masgrid.families.simas.confidence import parse_confidence
from masgrid.families.simas.profiles import ProfileFormatError, parse_profiles, pool_profiles
from masgrid.sdk.protocols import MSG_MODEL_ERROR, CommandOutcome, Protocol, register_protocol
from masgrid.task_api import ChannelNote

#: a final answer that could not be parsed (scored wrong and counted as unparsable); the
#: recorded marker also says why and whether the reply named several answers (`unparsable`)
UNPARSABLE = {"unparsable": True}


def unparsable(reason: str, ambiguous: bool = False) -> dict[str, Any]:
    """The marker a refused final answer submits: scored wrong, counted in `answer_unparsable`."""
    return {**UNPARSABLE, "ambiguous": ambiguous, "reason": reason}


def is_unparsable(value: Any) -> bool:
    return isinstance(value, dict) and value.get("unparsable") is True


def final_submission(parse: Callable[[str], Any], text: str | None,
                     with_confidence: bool = False) -> tuple[Any, str | None]:
    """What a final reply submits, and why it was refused (None when it parsed).

    The one code path for a SIMAS final answer: the group chat's last turn and `masgrid
    score` (SimasTask.submission) both call it, so a reply is unparsable in both or neither.
    A key question's output carries the confidence stated with it (`with_confidence`;
    appendix A.4, None when none was stated); a generation question's is the text itself.
    """
    try:
        answer = parse(text or "")
    except ValueError as exc:
        reason = str(exc) or type(exc).__name__
        return unparsable(reason, ambiguous=bool(getattr(exc, "ambiguous", False))), reason
    return (final_output(answer, parse_confidence(text or "")) if with_confidence else answer), None
PROFILE_PHASE, DISCUSSION_PHASE = "profiles", "discussion"


class ProfileValidator:
    """The agent host's check of a profile reply: the retry prompt, or None when usable."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, expect: str, text: str | None) -> str | None:
        try:
            parse_profiles(text, self.n)
            return None
        except ProfileFormatError as exc:
            return prompts.render("profile_retry", problem=str(exc), n=self.n)


@register_protocol
class GroupChatProtocol(Protocol):
    name = "groupchat"
    channel_support = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.attached, self.phase_no = False, 0  # Protocol.__init__ calls reset() before attach()
        super().__init__(*args, **kwargs)

    def reset(self) -> None:
        """A new phase: the driver resets once per phase after `attach`, so resets count phases."""
        super().reset()
        self.phase_no += self.attached
        self.transcript: list[tuple[int, str]] = []  # (speaker, text) in order
        self.seen: list[int] = [0] * self.n_agents  # transcript entries each agent has been shown
        self.turn = 0  # turns taken in this phase
        self.next_speaker: int | None = None
        self.delivery: dict[int, list[str]] = {}
        self.profile_source: str | None = None
        #: with a channel: per listener, (round due, reordered, speaker, text) not shown yet, in arrival order
        self.queue: list[list[tuple[int, bool, int, str]]] = [[] for _ in range(self.n_agents)]

    def attach(self, instance: Any) -> None:
        self.params = instance.params
        self.names: list[str] = list(instance.params["names"])
        self.rounds = int(instance.params["rounds"])
        self.cot = instance.params.get("condition") == "cot"
        self.generate = instance.params.get("profiles") == "generate" and not self.cot
        self.pool = [x["profile"] for x in instance.inputs]
        self.answerer = prompts.answerer_index(instance.params, self.n_agents)
        self.attached, self.phase_no = True, 0

    @property
    def phase_kind(self) -> str:
        first = max(self.phase_no, 1) == 1
        return PROFILE_PHASE if self.generate and first else DISCUSSION_PHASE

    @classmethod
    def fixed_texts(cls) -> tuple[str, ...]:
        return (MSG_MODEL_ERROR, *prompts.fixed_texts())

    @classmethod
    def reply_validator(cls, view: Any) -> Callable[[str, str | None], str | None] | None:
        params = view.params
        if params.get("profiles") == "generate" and params.get("condition") != "cot" and view.phase == 1:
            return ProfileValidator(view.n_agents)
        return None

    # -- turns -----------------------------------------------------------------------------------
    def total_turns(self) -> int:
        if self.phase_kind == PROFILE_PHASE or self.cot:
            return 1
        return self.n_agents * self.rounds + 1

    def speaker_of(self, turn: int) -> int:
        return self.answerer if turn >= self.n_agents * self.rounds else turn % self.n_agents

    def round_of(self, turn: int) -> int:
        """Discussion round of a turn (1..T); the final answer is round T + 1."""
        return 1 if self.phase_kind == PROFILE_PHASE or self.cot else turn // self.n_agents + 1

    def opening(self) -> dict[int, list[str]]:
        if self.phase_kind == PROFILE_PHASE:
            return {0: [prompts.render("profile_request", n=self.n_agents)]}
        if self.cot:
            return {0: [prompts.cot_user(self.params)]}
        return {0: [self._turn_text(0)]}

    def _history(self, agent: int, round_no: int = 0) -> str:
        if self.channel is not None:
            due = [item for item in self.queue[agent] if item[0] <= round_no]
            self.queue[agent] = [item for item in self.queue[agent] if item[0] > round_no]
            shown = [(speaker, text) for _, _, speaker, text in sorted(due, key=lambda item: not item[1])]
            return prompts.history(self.names, shown, nobody_yet=not self.transcript)
        new = self.transcript[self.seen[agent]:]
        self.seen[agent] = len(self.transcript)
        return prompts.history(self.names, new, nobody_yet=not self.transcript)

    def _turn_text(self, turn: int) -> str:
        agent = self.speaker_of(turn)
        if turn >= self.n_agents * self.rounds:
            return prompts.final_request(self.params, self._history(agent, self.rounds + 1))
        key = "first_turn" if turn < self.n_agents else "turn"
        return prompts.render(key, history=self._history(agent, self.round_of(turn)), name=self.names[agent], round=self.round_of(turn),
                              rounds=self.rounds, question_block=prompts.question_block(self.params))

    def end_round(self) -> dict[int, list[str]]:
        out, self.delivery = self.delivery, {}
        return out

    # -- replies ---------------------------------------------------------------------------------
    def apply_reply(self, agent: int, text: str | None, error: str | None) -> list[CommandOutcome]:
        turn, self.turn = self.turn, self.turn + 1
        expected = self.speaker_of(turn) if self.phase_kind == DISCUSSION_PHASE else 0
        if agent != expected or turn >= self.total_turns():
            raise ValueError(f"groupchat: agent {agent} replied out of turn (turn {turn}, expected {expected})")
        if self.phase_kind == PROFILE_PHASE:
            return [self._profiles(text, error)]
        final = self.cot or turn >= self.n_agents * self.rounds
        if final:
            return [self._final(agent, text, error)]
        said = text if error is None and text is not None else prompts.render("failed_turn")
        self.transcript.append((agent, said))
        self.seen[agent] = len(self.transcript)  # its own reply is in its history already
        note = self._send(agent, said, self.round_of(turn), reliable=error is not None) \
            if self.channel is not None else None
        if turn + 1 < self.total_turns():
            self.delivery = {self.speaker_of(turn + 1): [self._turn_text(turn + 1)]}
        if error is not None:
            return [CommandOutcome(block="", verb="discuss", reply=MSG_MODEL_ERROR, ok=False)]
        out = CommandOutcome(block=said, verb="discuss", reply="", communication=True, messages_sent=1,
                             deliveries=0)
        if note is not None:
            out.extra["channel"] = note
        return [out]

    def _send(self, agent: int, said: str, round_no: int, reliable: bool) -> ChannelNote:
        """One utterance into each listener's queue, as the channel lets it through."""
        assert self.channel is not None
        note = ChannelNote.empty()
        for j in range(self.n_agents):
            if j == agent:
                continue
            if reliable:  # a failed turn's marker
                self.queue[j].append((round_no, False, agent, said))
                continue
            fate = self.channel.fate(agent, j)
            due = round_no + fate.delay
            note.add(j, fate, due)
            self.queue[j].extend((due, fate.reordered, agent, said) for _ in range(fate.copies))
        return note

    def _final(self, agent: int, text: str | None, error: str | None) -> CommandOutcome:
        if error is not None:
            return CommandOutcome(block="", verb="final_answer", reply=MSG_MODEL_ERROR, ok=False)
        value, why = final_submission(lambda raw: self.answer_parser(agent, raw), text,
                                      with_confidence=not prompts.is_text(self.params))
        self.slots[agent] = value
        if why is not None:
            return CommandOutcome(block="", verb="final_answer", reply=f"unparsable: {why}", ok=False,
                                  submitted=value)
        value = unwrap_output(value)[0]
        return CommandOutcome(block=str(value), verb="final_answer", reply="", submitted=value)

    def _profiles(self, text: str | None, error: str | None) -> CommandOutcome:
        try:
            if error is not None:
                raise ProfileFormatError(error)
            profiles = [p.model_dump() for p in parse_profiles(text, self.n_agents)]
            source, ok, reply = "generated", True, ""
        except ProfileFormatError as exc:
            profiles = [{**p, "source": "pool_fallback"} for p in self.pool]
            source, ok, reply = "pool_fallback", False, f"profiles unusable ({exc}); the pool's profiles are used"
        self.profile_source = source
        self.slots = list(profiles)
        return CommandOutcome(block=source, verb="profiles", reply=reply, ok=ok, submitted=profiles[0])


def final_output(answer: Any, confidence: float | None) -> dict[str, Any]:
    """The system output o of a key question as the protocol submits it."""
    return {"answer": answer, "confidence": confidence}


def unwrap_output(output: Any) -> tuple[Any, float | None]:
    """(answer, stated confidence) of a submission: a `final_output`, or a bare answer (from
    `masgrid score`, or recorded before confidences were)."""
    if isinstance(output, dict) and "answer" in output and set(output) <= {"answer", "confidence"}:
        return output["answer"], output.get("confidence")
    return output, None


def pool_profile_dicts(n: int, seed: int) -> list[dict[str, Any]]:
    return [p.model_dump() for p in pool_profiles(n, seed)]
