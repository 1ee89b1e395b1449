from masgrid._private.platform.schedulers.base import (
    SCHEDULERS,
    PhaseContext,
    PhaseResult,
    Scheduler,
    get_scheduler,
    scheduler_class,
    register_scheduler,
)
from masgrid._private.platform.schedulers.asynchronous import AsynchronousScheduler
from masgrid._private.platform.schedulers.lockstep import LockstepScheduler
from masgrid._private.platform.schedulers.sequential import SequentialScheduler

__all__ = ["SCHEDULERS", "AsynchronousScheduler", "LockstepScheduler", "SequentialScheduler", "PhaseContext", "PhaseResult", "Scheduler", "get_scheduler",
           "register_scheduler", "scheduler_class"]
