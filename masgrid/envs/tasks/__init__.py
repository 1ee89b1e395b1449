"""Task registry: `task=<name>` resolves here. Families register on import; a lookup first
imports the family that provides the name (`_FAMILIES`), so the answer never depends on what
the asking process imported before (masgrid/envs/registry.py)."""

from __future__ import annotations

import importlib
from typing import Callable

from masgrid.envs.registry import UnknownName
from masgrid.envs.tasks.base import AgentView, Instance, Score, Task

_REGISTRY: dict[str, type[Task]] = {}
#: name prefix -> factory of the Task class for a full name, for families whose task names
#: come from data (CooperBench: `cooper/<pool>/<ID>`, one per task set of a dataset)
_PREFIXES: dict[str, Callable[[str], type[Task]]] = {}
#: task name, or name prefix ending in "/", -> the family module whose import registers it
_FAMILIES: dict[str, str] = {
    "sorting": "masgrid.envs.tasks.masbench", "max": "masgrid.envs.tasks.masbench",
    "prefix_sum": "masgrid.envs.tasks.masbench",
    "silo/": "masgrid.envs.tasks.silo", "agentsnet/": "masgrid.envs.tasks.agentsnet",
    "simas/": "masgrid.envs.tasks.simas", "cooper/": "masgrid.envs.tasks.cooper",
}
_FAMILY_MODULES = list(dict.fromkeys(_FAMILIES.values()))
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


def _load_family_of(name: str) -> None:
    for key, module in _FAMILIES.items():
        if name == key or (key.endswith("/") and name.startswith(key)):
            importlib.import_module(module)
            return


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
    if name in _REGISTRY:  # registered by a family that the table does not name
        return _REGISTRY[name]()
    raise UnknownName("task", name, sorted(_REGISTRY) + [f"{prefix}..." for prefix in sorted(_PREFIXES)])


__all__ = ["AgentView", "Instance", "Score", "Task", "get_task", "register_task", "register_task_prefix", "task_names"]
