"""CooperBench (cooperbench.txt): agents implement features of one repository in separate git
worktrees, talking in real time; their patches are merged and every feature's tests run.

Task names `cooper/<pool>/<ID>` resolve through the registry's prefix hook (task.py)."""

from masgrid.envs.tasks import register_task_prefix
from masgrid.envs.tasks.cooper import workspace_protocol  # noqa: F401  (registers protocol=workspace)
from masgrid.envs.tasks.cooper.task import PREFIX, CooperTask, task_class

register_task_prefix(PREFIX, task_class)

__all__ = ["CooperTask", "task_class"]
