from masgrid._private.platform.run.schedulers.base import (
    SCHEDULERS,
    PhaseContext,
    PhaseResult,
    Scheduler,
    get_scheduler,
    scheduler_class,
    register_scheduler,
)
from masgrid._private.platform.run.schedulers.asynchronous import AsynchronousScheduler
from masgrid._private.platform.run.schedulers.lockstep import LockstepScheduler
from masgrid._private.platform.run.schedulers.sequential import SequentialScheduler

__all__ = ["SCHEDULERS", "AsynchronousScheduler", "LockstepScheduler", "SequentialScheduler", "PhaseContext", "PhaseResult", "Scheduler", "get_scheduler",
           "register_scheduler", "scheduler_class"]
