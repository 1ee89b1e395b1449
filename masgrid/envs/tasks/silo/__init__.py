"""SILO-Bench (30 tasks in three levels): specs register in the level modules, then every
registered spec becomes the masgrid task `silo/<task_id>` (see adapter.py)."""

from masgrid.envs.tasks import register_task
from masgrid.envs.tasks.silo import level1, level2, level3  # noqa: F401  (register specs)
from masgrid.envs.tasks.silo.adapter import SiloTask, make_task_class
from masgrid.envs.tasks.silo.spec import SILO_SPECS, SiloData, SiloSpec, silo_spec

TASK_CLASSES: dict[str, type[SiloTask]] = {
    task_id: register_task(make_task_class(spec_cls)) for task_id, spec_cls in sorted(SILO_SPECS.items())
}

__all__ = ["SILO_SPECS", "TASK_CLASSES", "SiloData", "SiloSpec", "SiloTask", "silo_spec"]
