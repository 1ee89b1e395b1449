"""Task registry: `task=<name>` resolves here. Families register on import."""

from __future__ import annotations

import importlib
from typing import Callable

from masgrid.envs.tasks.base import AgentView, Instance, Score, Task

_REGISTRY: dict[str, type[Task]] = {}
#: name prefix -> factory of the Task class for a full name, for families whose task names
#: come from data (CooperBench: `cooper/<pool>/<ID>`, one per task set of a dataset)
_PREFIXES: dict[str, Callable[[str], type[Task]]] = {}
_FAMILY_MODULES = ["masgrid.envs.tasks.masbench", "masgrid.envs.tasks.silo", "masgrid.envs.tasks.agentsnet",
                   "masgrid.envs.tasks.simas", "masgrid.envs.tasks.cooper"]
_loaded = False


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator making a task selectable as `task=<cls.name>`."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"task {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def register_task_prefix(prefix: str, factory: Callable[[str], type[Task]]) -> None:
    """Names starting with `prefix` resolve through `factory` (which raises ValueError for a malformed name)."""
    _PREFIXES[prefix] = factory


def _load_families() -> None:
    global _loaded
    if not _loaded:
        for module in _FAMILY_MODULES:
            importlib.import_module(module)
        _loaded = True


def task_names() -> list[str]:
    _load_families()
    return sorted(_REGISTRY)


def get_task(name: str) -> Task:
    _load_families()
    try:
        return _REGISTRY[name]()
    except KeyError:
        for prefix, factory in _PREFIXES.items():
            if name.startswith(prefix):
                return factory(name)()
        patterns = "".join(f", {prefix}..." for prefix in sorted(_PREFIXES))
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(sorted(_REGISTRY))}{patterns}") from None


__all__ = ["AgentView", "Instance", "Score", "Task", "get_task", "register_task", "register_task_prefix", "task_names"]
