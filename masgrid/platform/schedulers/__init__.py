from masgrid.platform.schedulers.base import (
    SCHEDULERS,
    PhaseContext,
    PhaseResult,
    Scheduler,
    get_scheduler,
    register_scheduler,
)
from masgrid.platform.schedulers.local_rounds import LocalRoundsScheduler
from masgrid.platform.schedulers.lockstep import LockstepScheduler

__all__ = ["SCHEDULERS", "LocalRoundsScheduler", "LockstepScheduler", "PhaseContext", "PhaseResult", "Scheduler", "get_scheduler",
           "register_scheduler"]
