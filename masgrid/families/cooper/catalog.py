"""Task names `cooper/<pool>/<ID>` resolve through the task registry's prefix hook (task.py):
the family's task module."""

from masgrid._private.envs.tasks import register_task_prefix
from masgrid.families.cooper.task import PREFIX, CooperTask, task_class

register_task_prefix(PREFIX, task_class)

__all__ = ["CooperTask", "task_class"]
