"""A family's communication protocols: the base class, its options and registry, the answer
format, what one command did (`CommandOutcome`), and the notes a channel attaches to messages."""

from masgrid._private.envs.channel import ChannelNote, Fate
from masgrid._private.envs.harness import MSG_MODEL_ERROR, CommandOutcome
from masgrid._private.envs.protocols import register_protocol
from masgrid._private.envs.protocols.base import Protocol, ProtocolOptions, format_answer

__all__ = ["MSG_MODEL_ERROR", "ChannelNote", "CommandOutcome", "Fate", "Protocol", "ProtocolOptions", "format_answer",
           "register_protocol"]
