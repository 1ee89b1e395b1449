"""Task names `cooper/<pool>/<ID>` resolve through the task registry's prefix hook (task.py):
the family's task module."""

from masgrid.families.cooper.task import PREFIX, CooperTask, task_class
from masgrid.sdk.tasks import register_task_prefix

register_task_prefix(PREFIX, task_class)

__all__ = ["CooperTask", "task_class"]
