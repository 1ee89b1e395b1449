"""Task registry: `task=<name>` resolves here. A lookup first imports the task module of the
family that claims the name (masgrid/family.py), so the answer never depends on what the
asking process imported before."""

from __future__ import annotations

from collections.abc import Callable

from masgrid._private.envs.registry import UnknownName
from masgrid.family import families, family_of
from masgrid._private.envs.tasks.base import AgentView, Instance, Score, Task

_REGISTRY: dict[str, type[Task]] = {}
#: name prefix -> factory of the Task class for a full name, for families whose task names
#: come from data (CooperBench: `cooper/<pool>/<ID>`, one per task set of a dataset)
_PREFIXES: dict[str, Callable[[str], type[Task]]] = {}
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
        for family in families().values():
            family.load_tasks()
        _loaded = True


def _load_family_of(name: str) -> None:
    family = family_of(name)
    if family is not None:
        family.load_tasks()


def task_names() -> list[str]:
    _load_families()
    return sorted(_REGISTRY)


def get_task(name: str) -> Task:
    """A fresh Task for `name`, importing only the family that provides it; UnknownName (a
    KeyError and ValueError) lists every known name when none does."""
    if name not in _REGISTRY:
        _load_family_of(name)
    if name in _REGISTRY:
        return _REGISTRY[name]()
    for prefix, factory in _PREFIXES.items():
        if name.startswith(prefix):
            return factory(name)()
    _load_families()
    if name in _REGISTRY:  # registered by a task module under a name its family does not claim
        return _REGISTRY[name]()
    raise UnknownName("task", name, sorted(_REGISTRY) + [f"{prefix}..." for prefix in sorted(_PREFIXES)])


__all__ = ["AgentView", "Instance", "Score", "Task", "get_task", "register_task", "register_task_prefix", "task_names"]
