"""What `masgrid.run` returns: one run's status and the numbers its family reports.

The core fields (status, success, sr, rounds, model calls) mean the same in every family; the
rest is the family's own: the columns it declares (`Family.metrics`) and the one it puts first
(`Family.headline`). So a new family's numbers reach the summary, the terminal and the API
without a change here."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from masgrid.family import family_of


class RunSummary(BaseModel):
    run_id: str
    status: str
    error: str | None = None
    error_class: str | None = None  # failed runs: interrupted | task_error | config_error
    attempts: int = 1  # executions in this sweep (interrupted ones are retried)
    success: bool | None = None
    sr: float | None = None
    rounds: int | None = None
    #: the run's family's own metric columns (`Family.metrics`) that have a value, in declared order
    metrics: dict[str, Any] = Field(default_factory=dict)
    #: the run column the family reports first (`Family.headline`; "sr" for a task of no family)
    headline: str = "sr"
    headline_value: Any = None
    #: a two-phase run's scored phase: every `<metric>_phase2` column with a value (core and the
    #: family's), keyed by the metric's name; empty for a one-phase run
    phase2: dict[str, Any] = Field(default_factory=dict)
    model_calls: int | None = None
    model_errors: int | None = None
    wall_s: float = 0.0
    results_dir: str = ""
    #: the run was interrupted because its model endpoint stopped answering: what the probe found
    engine_lost: str | None = None
    #: ... and which endpoint (engine_alive.endpoint_name): a team's run has several
    engine_lost_endpoint: str | None = None


def family_numbers(task: str, run_row: dict[str, Any]) -> dict[str, Any]:
    """The summary's family fields (metrics, headline, headline_value, phase2) from a runs row."""
    family = family_of(task)
    declared = family.metrics if family is not None else {}
    headline = family.headline if family is not None else "sr"
    own = {name: run_row.get(name) for name in declared if not name.endswith(("_phase1", "_phase2"))}
    phase2 = {name[: -len("_phase2")]: value for name, value in run_row.items()
              if name.endswith("_phase2") and value is not None}
    return {"metrics": {k: v for k, v in own.items() if v is not None}, "headline": headline,
            "headline_value": run_row.get(headline), "phase2": phase2}


def summary_of_row(task: str, run_row: dict[str, Any], results_dir: str, **extra: Any) -> RunSummary:
    """A run's summary from its runs row: what its driver returns, and what a sweep rebuilds
    for a run whose driver died after the row was written (the row is what marks it complete)."""
    return RunSummary(run_id=run_row["run_id"], status=run_row["status"], error=run_row.get("error"),
                      error_class=run_row.get("error_class"), success=run_row.get("success"),
                      sr=run_row.get("sr"), rounds=run_row.get("rounds"), **family_numbers(task, run_row),
                      model_calls=run_row.get("model_calls"), model_errors=run_row.get("model_errors"),
                      wall_s=run_row.get("wall_s") or 0.0, results_dir=results_dir, **extra)
