"""A family's tasks: the base classes a task subclasses, its instances, scores and views, how a
task asks for a scoring model, and the registry that finds tasks by name."""

from masgrid._private.envs.tasks import get_task, register_task, register_task_prefix, task_names
from masgrid._private.envs.tasks.base import AgentView, Instance, Score, ScoringCallFailed, ScoringModel, Task

__all__ = ["AgentView", "Instance", "Score", "ScoringCallFailed", "ScoringModel", "Task", "get_task", "register_task",
           "register_task_prefix", "task_names"]
