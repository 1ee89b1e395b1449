"""An unreliable channel between agents: seeded loss, delay, duplication and reordering per message.

Every protocol that moves a message from a sender to a recipient asks `Channel.fate` what
happens to it. The outcome of one message is a pure function of (run seed, sender,
recipient, message index), where the index counts the sender's earlier messages to that same
recipient in the run: it does not depend on the order in which the environment applies the
agents' replies, nor on any other message. docs/channel.md gives the exact draw, so a test or
a researcher can recompute every recorded outcome.

All rates zero (the default) means no channel: protocols keep their own delivery path
untouched and no draw is made.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: the rates of one link or of the whole run, in the order their uniforms are drawn
RATES = ("loss", "delay", "duplicate", "reorder")
#: the recipient id of the shared store (kv writes); its name in a link key
STORE = -1
STORE_NAME = "store"
#: outcome labels; a message the channel changed in several ways joins them with "+" in this order
LOST, DELAYED, DUPLICATED, REORDERED, DELIVERED = "lost", "delayed", "duplicated", "reordered", "delivered"
OUTCOMES = (LOST, DELAYED, DUPLICATED, REORDERED, DELIVERED)
_PERSON = b"masgrid-channel"
_LINK = re.compile(r"^\s*(\*|\d+|store)\s*(->|-)\s*(\*|\d+|store)\s*$")


class LinkRates(BaseModel):
    """Rates of one link; a rate left out keeps the run's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    loss: float | None = Field(None, ge=0, le=1)
    delay: float | None = Field(None, ge=0, le=1)
    duplicate: float | None = Field(None, ge=0, le=1)
    reorder: float | None = Field(None, ge=0, le=1)

    @field_validator(*RATES, mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"a probability in [0, 1], not {str(value).lower()}")
        return value


def parse_link(key: str) -> tuple[str, str, bool]:
    """(sender, recipient, directed) of a link key: `i->j` (one direction) or `i-j` (both);
    either end may be `*` (any agent) and the recipient may be `store` (kv writes)."""
    match = _LINK.match(str(key))
    if not match:
        raise ValueError(f"link {key!r}: write 'i->j' (one direction) or 'i-j' (both), with agent ids, '*' or 'store'")
    sender, arrow, recipient = match.groups()
    if sender == STORE_NAME:
        raise ValueError(f"link {key!r}: the store only receives (kv writes); write 'i->store'")
    if arrow == "-" and recipient == STORE_NAME:
        raise ValueError(f"link {key!r}: the store only receives; write 'i->store'")
    return sender, recipient, arrow == "->"


def parse_link_line(line: str) -> tuple[str, dict[str, str]]:
    """(link, rates) of the one-line form 'LINK RATE=VALUE ...', e.g. '0->1 loss=1 delay=0.5'."""
    link, *pairs = line.split()
    rates = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or name not in RATES:
            raise ValueError(f"link {line!r}: write 'LINK RATE=VALUE ...' with rates among {', '.join(RATES)}")
        rates[name] = value
    if not rates:
        raise ValueError(f"link {line!r}: no rate given; write e.g. '{link} loss=0.5'")
    return link, rates


class ChannelSettings(BaseModel):
    """The `channel:` block of a run (docs/channel.md). All zero: perfect delivery, as before."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    loss: float = Field(0.0, ge=0, le=1, description="probability a message is dropped")
    delay: float = Field(0.0, ge=0, le=1, description="probability a message arrives `delay_rounds` late")
    delay_rounds: int = Field(1, ge=1, le=1_000, description="how many rounds (asynchronous schedule: recipient "
                                                              "steps) a delayed message arrives late")
    duplicate: float = Field(0.0, ge=0, le=1, description="probability a message is delivered twice")
    reorder: float = Field(0.0, ge=0, le=1, description="probability a message goes ahead of the other messages "
                                                         "its recipient gets at the same time")
    links: dict[str, LinkRates] = Field(default_factory=dict, description="per-link rates: 'i->j' or 'i-j' (both "
                                        "directions), '*' for any agent, 'store' for the kv store -> rates")

    @field_validator("loss", "delay", "duplicate", "reorder", "delay_rounds", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"a number, not {str(value).lower()}")
        return value

    @field_validator("links", mode="before")
    @classmethod
    def _link_keys(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, (list, tuple)):  # the one-line form: ["0->1 loss=1 delay=0.5", ...]
            pairs = [parse_link_line(str(item)) for item in value]
            keys = [key for key, _ in pairs]
            twice = sorted({key for key in keys if keys.count(key) > 1})
            if twice:
                raise ValueError(f"link {twice[0]!r} is given twice; give it once with all its rates")
            value = dict(pairs)
        if not isinstance(value, dict):
            raise ValueError("a mapping from link ('i->j', 'i-j', '*->j', 'i->store') to rates, e.g. "
                             "{'0->1': {loss: 0.5}}, or a list of 'LINK RATE=VALUE ...' strings")
        for key in value:
            parse_link(str(key))
        return {str(k): v for k, v in value.items()}

    @property
    def active(self) -> bool:
        """Whether any message can be touched: a non-zero rate, here or on a link."""
        return any(getattr(self, r) for r in RATES) or any(
            getattr(rates, r) for rates in self.links.values() for r in RATES)

    @model_validator(mode="after")
    def _unambiguous(self) -> ChannelSettings:
        """Two entries of one precedence level that can match the same message may not set the
        same rate: which one wins would depend on the order written, which a run's identity
        does not keep (its JSON sorts keys)."""
        parsed = [(key, parse_link(key), {r for r in RATES if getattr(rates, r) is not None})
                  for key, rates in self.links.items()]
        for k, (key_a, (a1, b1, dir_a), set_a) in enumerate(parsed):
            for key_b, (a2, b2, dir_b), set_b in parsed[k + 1:]:
                if _level(a1, b1, dir_a) != _level(a2, b2, dir_b) or not set_a & set_b:
                    continue
                ends_a = [(a1, b1)] if dir_a else [(a1, b1), (b1, a1)]
                ends_b = [(a2, b2)] if dir_b else [(a2, b2), (b2, a2)]
                if any(_meet(x1, x2) and _meet(y1, y2) for x1, y1 in ends_a for x2, y2 in ends_b):
                    raise ValueError(f"links {key_a!r} and {key_b!r} both set {', '.join(sorted(set_a & set_b))} for "
                                     f"some link; make one of them more specific (i-j, or i->j, wins over '*')")
        return self

    def check_agents(self, n_agents: int) -> None:
        """Every agent a link names exists (ValueError naming the link otherwise)."""
        for key in self.links:
            sender, recipient, _ = parse_link(key)
            for end in (sender, recipient):
                if end.isdigit() and int(end) >= n_agents:
                    raise ValueError(f"link {key!r}: no agent {end} (agents are 0..{n_agents - 1})")

    def rates(self, sender: int, recipient: int) -> dict[str, float]:
        """The rates of one link: the run's, then the matching `links` entries in order of
        precedence (wildcards, then `i-j`, then `i->j`; within a level, as written), each
        replacing only the rates it names."""
        out = {r: float(getattr(self, r)) for r in RATES}
        levels: list[list[LinkRates]] = [[], [], []]  # entries of one level never set the same rate
        s_name, r_name = str(sender), STORE_NAME if recipient == STORE else str(recipient)
        for key, rates in self.links.items():
            a, b, directed = parse_link(key)
            pairs = [(a, b)] if directed else [(a, b), (b, a)]
            if not any(x in ("*", s_name) and y in ("*", r_name) for x, y in pairs):
                continue
            levels[_level(a, b, directed)].append(rates)
        for entries in levels:
            for rates in entries:
                out.update({r: float(v) for r in RATES if (v := getattr(rates, r)) is not None})
        return out


def _level(sender: str, recipient: str, directed: bool) -> int:
    """Precedence of a link entry: 0 wildcard, 1 `i-j`, 2 `i->j` (the higher wins)."""
    return 0 if "*" in (sender, recipient) else (2 if directed else 1)


def _meet(a: str, b: str) -> bool:
    return a == b or "*" in (a, b)


def uniforms(seed: int, sender: int, recipient: int, index: int) -> tuple[float, float, float, float]:
    """The four uniforms in [0, 1) of one message: u_loss, u_delay, u_duplicate, u_reorder
    (docs/channel.md, "The draw")."""
    key = f"{seed}:{sender}:{recipient}:{index}".encode()
    digest = hashlib.blake2b(key, digest_size=32, person=_PERSON).digest()
    return tuple(int.from_bytes(digest[8 * k:8 * k + 8], "big") / 2.0**64 for k in range(4))  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Fate:
    """What the channel does to one message."""

    lost: bool
    delay: int  # rounds (or recipient steps) late; 0: on time
    copies: int  # 1, or 2 when duplicated; 0 when lost
    reordered: bool

    @property
    def outcome(self) -> str:
        """`lost`, `delivered`, or the changes joined by '+' (e.g. `delayed+duplicated`)."""
        if self.lost:
            return LOST
        parts = [name for name, on in ((DELAYED, self.delay > 0), (DUPLICATED, self.copies > 1),
                                       (REORDERED, self.reordered)) if on]
        return "+".join(parts) or DELIVERED


def draw(settings: ChannelSettings, seed: int, sender: int, recipient: int, index: int) -> Fate:
    """The fate of the `index`-th message (from 0) from `sender` to `recipient` in a run."""
    rates = settings.rates(sender, recipient)
    u_loss, u_delay, u_dup, u_reorder = uniforms(seed, sender, recipient, index)
    if u_loss < rates["loss"]:
        return Fate(lost=True, delay=0, copies=0, reordered=False)
    return Fate(lost=False, delay=settings.delay_rounds if u_delay < rates["delay"] else 0,
                copies=2 if u_dup < rates["duplicate"] else 1, reordered=u_reorder < rates["reorder"])


class Channel:
    """The channel of one run: settings, seed, and how many messages each link carried so far."""

    def __init__(self, settings: ChannelSettings, seed: int) -> None:
        self.settings = settings
        self.seed = seed
        self._sent: dict[tuple[int, int], int] = {}

    def fate(self, sender: int, recipient: int) -> Fate:
        """The fate of the sender's next message to `recipient` (counted, in sending order)."""
        index = self._sent.get((sender, recipient), 0)
        self._sent[(sender, recipient)] = index + 1
        return draw(self.settings, self.seed, sender, recipient, index)


def make_channel(settings: ChannelSettings | None, seed: int) -> Channel | None:
    """A run's channel, or None when it is off (no rate anywhere): then nothing is drawn."""
    return Channel(settings, seed) if settings is not None and settings.active else None


@dataclass(slots=True)
class ChannelNote:
    """What the channel did to the messages of one command, for its event row: one entry per
    recipient (`to`), its outcome label and the round it becomes readable (None: lost, or not
    known when sent)."""

    to: list[int]
    outcome: list[str]
    round: list[int | None]

    @classmethod
    def empty(cls) -> ChannelNote:
        return cls([], [], [])

    def add(self, recipient: int, fate: Fate, round_no: int | None) -> None:
        self.to.append(recipient)
        self.outcome.append(fate.outcome)
        self.round.append(None if fate.lost else round_no)

    def as_columns(self) -> dict[str, Any]:
        return {"channel_to": list(self.to), "channel_outcome": list(self.outcome), "channel_round": list(self.round)}
