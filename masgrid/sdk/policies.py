"""Scripted agents: the policy base class that stands in for a model in tests and baselines,
and the helpers that write replies in the command syntax."""

from masgrid._private.envs.policies import GatherThenSubmit, ScriptedPolicy, fence, reply

__all__ = ["GatherThenSubmit", "ScriptedPolicy", "fence", "reply"]
