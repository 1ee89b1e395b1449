"""Schedules: how a family adds a way of ordering agents' turns, beside lockstep, sequential
and asynchronous."""

from masgrid._private.platform.run.schedulers.base import PhaseContext, PhaseResult, Scheduler, register_scheduler

__all__ = ["PhaseContext", "PhaseResult", "Scheduler", "register_scheduler"]
