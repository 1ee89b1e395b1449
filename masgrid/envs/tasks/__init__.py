"""Task registry: `task=<name>` resolves here. Families register on import."""

from __future__ import annotations

import importlib

from masgrid.envs.tasks.base import AgentView, Instance, Score, Task

_REGISTRY: dict[str, type[Task]] = {}
_FAMILY_MODULES = ["masgrid.envs.tasks.masbench", "masgrid.envs.tasks.silo", "masgrid.envs.tasks.agentsnet",
                   "masgrid.envs.tasks.simas"]
_loaded = False


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator making a task selectable as `task=<cls.name>`."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"task {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


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
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(sorted(_REGISTRY))}") from None


__all__ = ["AgentView", "Instance", "Score", "Task", "get_task", "register_task", "task_names"]
