"""masgrid: a Ray-distributed platform for multi-agent LLM coordination benchmarks.

The public API (docs/api.md)::

    import masgrid
    summary = masgrid.run(task="sorting", protocol="kv", agents=5, results_dir="results")
    masgrid.sweep({"agents": [2, 4, 8], "seed": range(3)}, "task=max", "results_dir=results")
    runs, agents, events = masgrid.load_results("results")
    masgrid.report("results")

For benchmark families: `Family`, `Metric`, `CliCommand`, `Task`, `Instance`, `Score`, and
`masgrid.task_api`. Every other module is an implementation detail and may change.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first use, so `import masgrid` is cheap
#: and importing a family from masgrid's own modules never cycles back here)
_EXPORTS = {
    "run": "masgrid._api", "sweep": "masgrid._api", "grid": "masgrid._api", "compose": "masgrid._api",
    "load_results": "masgrid._api", "report": "masgrid._api", "Results": "masgrid._api",
    "RunConfig": "masgrid._private.platform.run.config", "ConfigError": "masgrid._private.platform.run.config",
    "RunSummary": "masgrid._private.platform.run.run_summary", "SweepResult": "masgrid._private.platform.sweeps.sweep",
    "Family": "masgrid.family", "Metric": "masgrid.family", "CliCommand": "masgrid.family",
    "families": "masgrid.family",
    "Task": "masgrid._private.envs.tasks.base", "Instance": "masgrid._private.envs.tasks.base", "Score": "masgrid._private.envs.tasks.base",
    "get_task": "masgrid._private.envs.tasks", "task_names": "masgrid._private.envs.tasks",
    "PreflightError": "masgrid._private.platform.sweeps.preflight",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'masgrid' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from masgrid._api import Results as Results, compose as compose, grid as grid, load_results as load_results, report as report, run as run, sweep as sweep
    from masgrid._private.envs.tasks import get_task as get_task, task_names as task_names
    from masgrid._private.envs.tasks.base import Instance as Instance, Score as Score, Task as Task
    from masgrid.family import CliCommand as CliCommand, Family as Family, Metric as Metric, families as families
    from masgrid._private.platform.run.config import ConfigError as ConfigError, RunConfig as RunConfig
    from masgrid._private.platform.run.run_summary import RunSummary as RunSummary
    from masgrid._private.platform.sweeps.preflight import PreflightError as PreflightError
    from masgrid._private.platform.sweeps.sweep import SweepResult as SweepResult
