"""The LOCAL message-passing protocol of AgentsNet (section 4, appendix A, Algorithm 1).

Synchronous rounds on a graph: in each of T rounds every agent replies with one flat JSON
object mapping neighbour names to messages (omitting a neighbour is allowed); what is sent
in round r is delivered at the start of round r + 1, together with the names of the
neighbours that stayed silent and the number of rounds left. After round T, a last model
call asks for the final answer in the '### Final Answer ###' format.

A reply that is not such a JSON object (or names someone who is not a neighbour), or a
final answer that is not one of the agent's valid options, gets exactly one retry: the
agent host shows the model its own reply plus an error message and calls it again in the
same round (`LocalReplyValidator`, applied by `AgentHost` through `reply_validator`). If
the retry fails too, the agent sends nothing that round (or has no final answer), as in
the reference implementation.

Where we differ from the reference (documented in docs/agentsnet.md): the reference
accepts JSON keys from its global name list and silently drops messages to non-neighbours;
we treat a non-neighbour key as malformed (it gets the retry), as the issue specifies.
The reference tries the text from every '{' to the last '}'; we decode the first complete
JSON value at every '{', which also accepts a JSON object followed by more prose.
`agentsnet.parser=reference` (instance param `parser`) parses as the reference does
instead (local_reference.py); the retry is the same in both modes.

Through an unreliable channel (masgrid's `channel:` block, docs/channel.md) each entry of a
round-r message object is one message from the sender to that neighbour, due in the round
r + 1 inbox: a lost one never arrives (the neighbour is listed as silent), a delayed one
arrives in the inbox of round r + 1 + d (never, when that is after the final answer's), a
duplicated one is listed twice, a reordered one is listed before the other messages of its
inbox (normally in neighbour order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from string import Template
from typing import Any, ClassVar

import yaml

from masgrid.sdk.protocols import MSG_MODEL_ERROR, CommandOutcome, Protocol, register_protocol
from masgrid.sdk.resources import conf_cached, read_text
from masgrid.task_api import ChannelNote

FINAL_MARKER = "### Final Answer ###"
EXPECT_MESSAGES, EXPECT_FINAL = "messages", "final"
#: how replies are read: strict (this module, the default) or as the released code does
PARSER_MODES = ("strict", "reference")

_DECODER = json.JSONDecoder()


@conf_cached(maxsize=1)
def _prompt_file() -> dict[str, str]:
    return yaml.safe_load(read_text("prompts/agentsnet/protocol.yaml"))


def local_prompts() -> dict[str, str]:
    """The protocol's user-message templates (parsed once per process)."""
    return dict(_prompt_file())


class MessageFormatError(ValueError):
    """Why a reply is not a valid message object (shown to the model in the retry)."""


def parse_messages(text: str | None, neighbors: list[str]) -> dict[str, str]:
    """The message object of a reply: the first JSON object whose keys are neighbours."""
    if not text:
        raise MessageFormatError("the reply was empty")
    problem = "no JSON object was found"
    allowed = set(neighbors)
    for match in re.finditer(r"\{", text):
        try:
            value, _ = _DECODER.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        except RecursionError:  # a hostile or runaway reply: refuse it rather than crash the run
            raise MessageFormatError("the JSON is nested too deeply") from None
        if not isinstance(value, dict):
            continue
        strangers = [k for k in value if k not in allowed]
        if strangers:
            problem = f"{', '.join(map(str, strangers))} is not one of your neighbours ({', '.join(neighbors)})"
            continue
        if not all(isinstance(v, str) for v in value.values()):
            problem = "every message must be a JSON string"
            continue
        return value
    raise MessageFormatError(problem)


def parse_final_answer(text: str | None, options: list[str]) -> str:
    """The option right after the final-answer marker, as a whole word: 'Group 12' is not
    read as 'Group 1' (the reference tries options in list order, without a boundary)."""
    if text:
        ordered = sorted(options, key=len, reverse=True)
        pattern = re.escape(FINAL_MARKER) + r"\s*(" + "|".join(re.escape(o) for o in ordered) + r")(?![\w-])"
        found = re.search(pattern, text)
        if found:
            return found.group(1)
    raise ValueError(f"no '{FINAL_MARKER}' followed by one of: {', '.join(options)}")


def read_messages(text: str | None, neighbors: list[str], parser: str = "strict") -> tuple[dict[str, str], list[str]]:
    """The messages a reply delivers and the keys dropped on the way (reference mode only)."""
    if parser == "reference":
        from masgrid.families.agentsnet.local_reference import reference_parse_messages

        got = reference_parse_messages(text, neighbors)
        return got.delivered, got.dropped
    return parse_messages(text, neighbors), []


def read_final_answer(text: str | None, options: list[str], parser: str = "strict") -> str:
    """The final answer of a reply under the parser mode; ValueError when there is none."""
    if parser == "reference":
        from masgrid.families.agentsnet.local_reference import reference_parse_final_answer

        return reference_parse_final_answer(text, options)
    return parse_final_answer(text, options)


def parser_mode(params: dict[str, Any]) -> str:
    """The instance's parser mode (instances made before the option existed are strict)."""
    mode = str(params.get("parser") or "strict")
    if mode not in PARSER_MODES:
        raise ValueError(f"agentsnet.parser: one of {', '.join(PARSER_MODES)}, not {mode!r}")
    return mode


class LocalReplyValidator:
    """Checks one agent's reply against what the round expects; returns the retry prompt."""

    def __init__(self, neighbors: list[str], options: list[str], parser: str = "strict") -> None:
        self.neighbors = neighbors
        self.options = options
        self.parser = parser
        self.prompts = local_prompts()

    def __call__(self, expect: str, text: str | None) -> str | None:
        if expect == EXPECT_FINAL:
            try:
                read_final_answer(text, self.options, self.parser)
                return None
            except ValueError:
                return self.prompts["retry_answer"]
        try:
            read_messages(text, self.neighbors, self.parser)
            return None
        except MessageFormatError as exc:
            return Template(self.prompts["retry_json"]).safe_substitute(problem=str(exc))


@register_protocol
class LocalProtocol(Protocol):
    name = "local"
    #: what an agent's local input must hold (the task puts it there)
    required_input: ClassVar[tuple[str, ...]] = ("name", "neighbors", "valid_answers")
    channel_support = True

    def reset(self) -> None:
        super().reset()
        self.outbox: dict[int, dict[str, str]] = {}
        #: with a channel: inbox round -> recipient -> [(reordered, sender, text)] in arrival order
        self.arrivals: dict[int, dict[int, list[tuple[bool, int, str]]]] = {}
        self.failed: list[int] = [0] * self.n_agents

    def attach(self, instance: Any) -> None:
        inputs = instance.inputs
        for key in self.required_input:
            if not all(isinstance(x, dict) and key in x for x in inputs):
                raise ValueError(f"protocol local: every agent's input needs {key!r} (an AgentsNet task)")
        self.names: list[str] = [x["name"] for x in inputs]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.neighbors: list[list[str]] = [list(x["neighbors"]) for x in inputs]
        #: each agent's valid final answers (not `options`: that is the base class's ProtocolOptions)
        self.valid_answers: list[list[str]] = [list(x["valid_answers"]) for x in inputs]
        self.rounds = int(instance.params["rounds"])
        self.cot = bool(instance.params.get("cot", True))
        self.question = str(instance.params.get("question", ""))
        self.parser = parser_mode(instance.params)
        self.prompts = local_prompts()

    @classmethod
    def fixed_texts(cls) -> tuple[str, ...]:
        prompts = local_prompts()
        return (MSG_MODEL_ERROR, *(f"{key}={prompts[key]}" for key in sorted(prompts)))

    @classmethod
    def reply_validator(cls, view: Any) -> Callable[[str, str | None], str | None] | None:
        local = view.local_input
        return LocalReplyValidator(list(local["neighbors"]), list(local["valid_answers"]), parser_mode(view.params))

    # -- prompts -------------------------------------------------------------------------------
    def _t(self, key: str, **values: Any) -> str:
        return Template(self.prompts[key]).safe_substitute(**values)

    def opening(self) -> dict[int, list[str]]:
        cot = self.prompts["cot_messages"] if self.cot else ""
        return {i: [self._t("first_round", cot=cot)] for i in range(self.n_agents)}

    def _inbox(self, agent: int, final: bool) -> str:
        if self.channel is not None:
            return self._channel_inbox(agent, final)
        name = self.names[agent]
        parts = [self.prompts["final_inbox_header" if final else "inbox_header"]]
        silent = []
        for nb in self.neighbors[agent]:
            text = self.outbox.get(self.index[nb], {}).get(name)
            if text is None:
                silent.append(nb)
            else:
                parts.append(self._t("message_item", sender=nb, text=text))
        if silent:
            parts.append(self._t("silent", names=", ".join(silent)))
        return "".join(parts)

    def _channel_inbox(self, agent: int, final: bool) -> str:
        """The inbox of the next round as the channel delivers it (see the module docstring)."""
        items = self.arrivals.get(self.round + 1, {}).get(agent, [])
        order = {nb: k for k, nb in enumerate(self.neighbors[agent])}
        # reordered first, then neighbour order; copies and late arrivals keep their arrival order
        items = sorted(items, key=lambda it: (not it[0], order.get(self.names[it[1]], len(order))))
        parts = [self.prompts["final_inbox_header" if final else "inbox_header"]]
        parts += [self._t("message_item", sender=self.names[sender], text=text) for _, sender, text in items]
        heard = {self.names[sender] for _, sender, _ in items}
        silent = [nb for nb in self.neighbors[agent] if nb not in heard]
        if silent:
            parts.append(self._t("silent", names=", ".join(silent)))
        return "".join(parts)

    def _send(self, agent: int, messages: dict[str, str]) -> ChannelNote:
        """Round r's messages of `agent` into the inboxes the channel puts them in."""
        assert self.channel is not None
        note = ChannelNote.empty()
        for name, text in messages.items():
            j = self.index[name]
            fate = self.channel.fate(agent, j)
            due = self.round + 1 + fate.delay
            note.add(j, fate, due)
            for _ in range(fate.copies):
                self.arrivals.setdefault(due, {}).setdefault(j, []).append((fate.reordered, agent, text))
        return note

    def end_round(self) -> dict[int, list[str]]:
        """Synchronous delivery: round r's messages become each agent's round r + 1 prompt."""
        if self.round > self.rounds:
            return {}
        out: dict[int, list[str]] = {}
        final = self.round == self.rounds
        left = self.rounds - self.round
        for i in range(self.n_agents):
            text = self._inbox(i, final)
            if final:
                cot = self.prompts["cot_final"] if self.cot else ""
                text += cot + self._t("final_format", question=self.question,
                                      options=", ".join(self.valid_answers[i]))
            else:
                cot = self.prompts["cot_messages"] if self.cot else ""
                text += self._t("next_round", cot=cot.strip(), left=left, neighbors=", ".join(self.neighbors[i]))
                if left == 1:
                    text += self.prompts["last_round"]
            out[i] = [text.strip()]
        self.outbox = {}
        self.arrivals.pop(self.round + 1, None)
        return out

    # -- replies -------------------------------------------------------------------------------
    def apply_reply(self, agent: int, text: str | None, error: str | None) -> list[CommandOutcome]:
        final = self.round > self.rounds
        verb = "final_answer" if final else "messages"
        if error is not None:
            self.failed[agent] += 1
            return [CommandOutcome(block="", verb=verb, reply=MSG_MODEL_ERROR, ok=False)]
        if final:
            try:
                value = read_final_answer(text, self.valid_answers[agent], self.parser)
            except ValueError as exc:
                self.failed[agent] += 1
                return [CommandOutcome(block="", verb=verb, reply=str(exc), ok=False)]
            self.slots[agent] = value
            return [CommandOutcome(block=value, verb=verb, reply="", submitted=value)]
        try:
            messages, dropped = read_messages(text, self.neighbors[agent], self.parser)
        except MessageFormatError as exc:
            self.failed[agent] += 1
            self.outbox[agent] = {}
            return [CommandOutcome(block="", verb=verb, reply=str(exc), ok=False)]
        self.outbox[agent] = messages
        # reference mode: keys naming agents who are not neighbours reach nobody (the agent is not told)
        note = f"not delivered, not a neighbour: {', '.join(dropped)}" if dropped else ""
        out = CommandOutcome(block=json.dumps(messages, ensure_ascii=False), verb=verb, reply=note,
                             communication=True, messages_sent=len(messages), deliveries=len(messages))
        if self.channel is not None:
            sent = self._send(agent, messages)
            out.extra["channel"] = sent
            out.deliveries = sum(o != "lost" for o in sent.outcome)
        return [out]
