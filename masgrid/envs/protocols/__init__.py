"""Communication substrates, by the names used in configs (`protocol=...`)."""

from __future__ import annotations

from masgrid.envs.protocols.base import AnswerParser, Protocol, ProtocolOptions, agent_name
from masgrid.envs.protocols.broadcast import BroadcastProtocol
from masgrid.envs.protocols.kv import KVProtocol
from masgrid.envs.protocols.local import LocalProtocol
from masgrid.envs.protocols.p2p import P2PProtocol

PROTOCOLS: dict[str, type[Protocol]] = {
    BroadcastProtocol.name: BroadcastProtocol,
    P2PProtocol.name: P2PProtocol,
    KVProtocol.name: KVProtocol,
    LocalProtocol.name: LocalProtocol,
}


def register_protocol(cls: type[Protocol]) -> type[Protocol]:
    """Class decorator: make a substrate selectable as `protocol=<cls.name>`."""
    PROTOCOLS[cls.name] = cls
    return cls


def make_protocol(name: str, n_agents: int, answer_parser: AnswerParser,
                  options: ProtocolOptions | None = None) -> Protocol:
    try:
        cls = PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; choose one of {sorted(PROTOCOLS)}") from None
    return cls(n_agents, answer_parser, options)


__all__ = ["PROTOCOLS", "AnswerParser", "Protocol", "ProtocolOptions", "agent_name", "make_protocol", "register_protocol"]
