"""What a benchmark family's code builds on: the task base classes and registration, the
scripted-policy helpers and the command syntax agents reply in. Stable for family authors
(docs/families.md); everything else under masgrid is private."""

from masgrid._private.envs.channel import ChannelNote, Fate
from masgrid._private.envs.policies import GatherThenSubmit, ScriptedPolicy, fence, reply
from masgrid._private.envs.protocols import Protocol, ProtocolOptions, register_protocol
from masgrid._private.envs.protocols.base import format_answer
from masgrid._private.envs.tasks import register_task, register_task_prefix
from masgrid._private.envs.tasks.base import AgentView, Instance, Score, ScoringModel, Task

__all__ = ["AgentView", "ChannelNote", "Fate", "GatherThenSubmit", "Instance", "Protocol", "ProtocolOptions",
           "Score", "ScoringModel", "ScriptedPolicy", "Task", "fence", "format_answer", "register_protocol", "register_task",
           "register_task_prefix", "reply"]
