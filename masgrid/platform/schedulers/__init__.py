from masgrid.platform.schedulers.base import (
    SCHEDULERS,
    PhaseContext,
    PhaseResult,
    Scheduler,
    get_scheduler,
    register_scheduler,
)
from masgrid.platform.schedulers.asynchronous import AsynchronousScheduler
from masgrid.platform.schedulers.lockstep import LockstepScheduler
from masgrid.platform.schedulers.sequential import SequentialScheduler

__all__ = ["SCHEDULERS", "AsynchronousScheduler", "LockstepScheduler", "SequentialScheduler", "PhaseContext", "PhaseResult", "Scheduler", "get_scheduler",
           "register_scheduler"]
