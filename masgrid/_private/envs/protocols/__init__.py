"""Communication substrates, by the names used in configs (`protocol=...`).

`PROTOCOLS` resolves every name through its providing module (masgrid/_private/envs/registry.py):
the shared ones below, and each family's own (`Family.protocols`), so a process that never
imported a family's package still finds its protocol, with its reply validators."""

from __future__ import annotations

from masgrid._private.envs.protocols.base import AnswerParser, Protocol, ProtocolOptions, agent_name
from masgrid._private.envs.registry import Registry, UnknownName
from masgrid.family import families

#: protocol name -> the module whose import registers it
_PROVIDERS: dict[str, str] = {
    "broadcast": "masgrid._private.envs.protocols.broadcast",
    "p2p": "masgrid._private.envs.protocols.p2p",
    "kv": "masgrid._private.envs.protocols.kv",
}

PROTOCOLS: Registry[type[Protocol]] = Registry("protocol", {
    **_PROVIDERS, **{name: module for family in families().values() for name, module in family.protocols.items()}})


def register_protocol(cls: type[Protocol]) -> type[Protocol]:
    """Class decorator: make a substrate selectable as `protocol=<cls.name>`."""
    return PROTOCOLS.register(cls.name, cls)


def get_protocol(name: str) -> type[Protocol]:
    """The substrate class of `name`, importing its module if needed; UnknownName (a
    KeyError and ValueError listing the known names) otherwise."""
    return PROTOCOLS[name]


def make_protocol(name: str, n_agents: int, answer_parser: AnswerParser,
                  options: ProtocolOptions | None = None) -> Protocol:
    return get_protocol(name)(n_agents, answer_parser, options)


__all__ = ["PROTOCOLS", "AnswerParser", "Protocol", "ProtocolOptions", "UnknownName", "agent_name", "get_protocol",
           "make_protocol", "register_protocol"]
