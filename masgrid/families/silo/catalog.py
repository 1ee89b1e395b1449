"""Every SILO-Bench spec registered as the masgrid task `silo/<task_id>` (adapter.py): the
family's task module (imported when a `silo/...` name is first asked for)."""

from masgrid.families.silo import level1, level2, level3  # noqa: F401  (register specs)
from masgrid.families.silo.adapter import SiloTask, make_task_class
from masgrid.families.silo.spec import SILO_SPECS, SiloData, SiloSpec, silo_spec
from masgrid.sdk.tasks import register_task


def _registered(spec_cls: type[SiloSpec]) -> type[SiloTask]:
    """The spec's task class, registered (register_task returns the class it is given)."""
    cls = make_task_class(spec_cls)
    register_task(cls)
    return cls


TASK_CLASSES: dict[str, type[SiloTask]] = {
    task_id: _registered(spec_cls) for task_id, spec_cls in sorted(SILO_SPECS.items())
}

__all__ = ["SILO_SPECS", "TASK_CLASSES", "SiloData", "SiloSpec", "SiloTask", "silo_spec"]
