"""MAS-Bench family: sorting, max, prefix_sum (registered on import)."""

from masgrid.envs.tasks.masbench.tasks import MaximumTask, PrefixSumTask, SortingTask

__all__ = ["MaximumTask", "PrefixSumTask", "SortingTask"]
