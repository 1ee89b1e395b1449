"""The short form of the family SDK's task modules: the task base classes and registration,
the scripted-policy helpers, the protocol base and the command syntax agents reply in, in one
import. Stable for family authors; the whole SDK is `masgrid.sdk` (docs/families.md)."""

from masgrid.sdk.policies import GatherThenSubmit, ScriptedPolicy, fence, reply
from masgrid.sdk.protocols import ChannelNote, Fate, Protocol, ProtocolOptions, format_answer, register_protocol
from masgrid.sdk.tasks import AgentView, Instance, Score, ScoringModel, Task, register_task, register_task_prefix

__all__ = ["AgentView", "ChannelNote", "Fate", "GatherThenSubmit", "Instance", "Protocol", "ProtocolOptions",
           "Score", "ScoringModel", "ScriptedPolicy", "Task", "fence", "format_answer", "register_protocol", "register_task",
           "register_task_prefix", "reply"]
