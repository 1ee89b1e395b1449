"""Sweeps: validate a whole grid, skip what is already recorded, run the rest on Ray.

A run's identity is `RunConfig.run_id` (hash of the resolved config and seed, without
`results_dir` and `execution`). The recorder names every file by run id and writes the
`runs` row last, so "complete" means "has a runs row": resuming an interrupted sweep
re-plans the grid against `results_dir/runs`, skips runs recorded ok or degraded, re-runs
runs the platform interrupted (status failed, error_class interrupted) and invalid ones, and
re-runs runs that failed on their own terms only when asked (`sweep.retry_failed=true`). The Hydra launcher in
`hydra_plugins/masgrid_ray_launcher` feeds this module; `ray job submit` runs the same CLI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from masgrid.family import top_level_name
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.sweeps.admission import AUTO_CEILING, FIXED_DEFAULT
from masgrid._private.platform.sweeps.budget import BudgetSettings
from masgrid._private.platform.sweeps.stopping import AdaptiveSettings
from masgrid._private.platform.run.config import ConfigError, RunConfig, format_validation_error
from masgrid._private.platform.run.run_outcome import USABLE  # complete on resume: the statuses whose metrics tables use

if TYPE_CHECKING:
    from masgrid._private.platform.sweeps.budget import SweepBudget
    from masgrid._private.platform.sweeps.progress import SweepProgress

#: the config node holding sweep settings; stripped before RunConfig validation
SWEEP_KEY = "sweep"

log = logging.getLogger(__name__)


class SweepSettings(BaseModel):
    """How a grid is executed; never part of any run's identity."""

    model_config = ConfigDict(extra="forbid")

    max_concurrent: int | None = Field(
        None, ge=1, description="the ceiling on runs in flight at once over the whole sweep; null (default): "
        f"{AUTO_CEILING} where admission follows the engines' load, {FIXED_DEFAULT} elsewhere (scripted runs, an "
        "endpoint whose load cannot be read, admission=fixed). Runs without a model endpoint, and runs against an "
        "endpoint whose load cannot be read, keep this many (null: 4) in flight")
    admission: Literal["load", "fixed"] = Field(
        "load", description="load: per model endpoint, start another run while the engine has no request waiting "
        "(vLLM's /metrics, or the Serve replicas' ongoing requests), from 4 up to the ceiling, backing off while "
        "requests wait, never below one run (platform/sweeps/admission.py); fixed: exactly max_concurrent (null: 4) in "
        "flight, as before")
    retry_failed: bool = Field(False, description="re-run grid points that failed on their own terms "
                                                  "(error_class task_error, config_error); interrupted ones always re-run")
    retry_invalid: bool = Field(True, description="re-run grid points recorded invalid (their model calls failed: "
                                                  "the endpoint may be back); false keeps them")
    progress: Literal["auto", "rich", "plain", "off"] = Field(
        "auto", description="auto: a live bar on a terminal, plain log lines otherwise (job logs)")
    log_every_s: float = Field(10.0, ge=0, description="plain mode: at most one progress line per interval")
    reuse_actors: bool = Field(True, description="runs borrow warm environment/agent hosts from the pool "
                                                 "(execution.reuse_actors; see benchmarks/bench_runtime.py)")
    adaptive: AdaptiveSettings = Field(default_factory=AdaptiveSettings,
                                       description="stopping rules per grid cell (docs/adaptive.md); inactive unless "
                                                   "adaptive.width or adaptive.compare is set")
    budget: BudgetSettings = Field(default_factory=BudgetSettings,
                                   description="caps on the sweep's spend in tokens or US dollars, earlier "
                                               "invocations' runs included (docs/hosted-apis.md, Budgets)")


def sweep_settings(raw: Mapping[str, Any]) -> SweepSettings:
    """Validated sweep settings; ConfigError naming each `sweep.<key>` at fault."""
    try:
        return SweepSettings.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError("\n".join(["invalid configuration:", *(f"  {SWEEP_KEY}.{line.strip()}" for line in
                                      format_validation_error(exc).splitlines()[1:])])) from None


def split_job_config(data: Mapping[str, Any]) -> tuple[RunConfig, SweepSettings]:
    """One composed job config (hydra node removed) -> validated run config and sweep settings."""
    data = dict(data)
    raw = data.pop(SWEEP_KEY, None) or {}
    problems: list[str] = []
    settings = cfg = None
    try:
        settings = sweep_settings(raw)
    except ConfigError as exc:
        problems += str(exc).splitlines()[1:]
    try:
        cfg = RunConfig.from_mapping(data)
    except ConfigError as exc:
        problems += str(exc).splitlines()[1:]
    if settings is None or cfg is None:
        raise ConfigError("\n".join(["invalid configuration:", *problems]))
    return cfg, settings


@dataclass
class SweepPlan:
    """What a sweep will do, decided before Ray starts."""

    total: int  # distinct grid points
    todo: list[RunConfig]
    skipped_ok: int = 0
    skipped_failed: int = 0  # recorded failures left alone (retry_failed=false)
    retried: int = 0  # recorded failures that will run again
    interrupted: int = 0  # of those: runs the platform interrupted (always run again)
    duplicates: int = 0  # job configs that resolve to an already listed run id


def recorded_status(results_dir: str) -> dict[str, tuple[str, str | None]]:
    """run_id -> (status, error_class) of every run with a runs row under results_dir (empty
    if none); one dataset scan, damaged files set aside first (Recorder.run_outcomes)."""
    from pathlib import Path

    if not (Path(results_dir) / "runs").is_dir():
        return {}
    from masgrid._private.platform.results.recorder import Recorder

    return Recorder(results_dir).run_outcomes()


def plan_sweep(cfgs: Sequence[RunConfig], retry_failed: bool = False, retry_invalid: bool = True,
               statuses: dict[str, dict[str, tuple[str, str | None]]] | None = None) -> SweepPlan:
    """`statuses`: results_dir -> recorded_status(results_dir), when the caller has read them already."""
    seen: set[tuple[str, str]] = set()
    unique: list[RunConfig] = []
    for cfg in cfgs:  # the same run in two results_dirs is two runs
        if (cfg.results_dir, cfg.run_id) not in seen:
            seen.add((cfg.results_dir, cfg.run_id))
            unique.append(cfg)
    from masgrid._private.platform.run.run_outcome import RERUN_CLASSES

    statuses = dict(statuses or {})
    plan = SweepPlan(total=len(unique), todo=[], duplicates=len(cfgs) - len(unique))
    for cfg in unique:
        if cfg.results_dir not in statuses:  # read once per results_dir, not once per run
            statuses[cfg.results_dir] = recorded_status(cfg.results_dir)
        status, error_class = statuses[cfg.results_dir].get(cfg.run_id, (None, None))
        interrupted = status == "failed" and error_class in RERUN_CLASSES
        if status in USABLE or (status == "invalid" and not retry_invalid):
            plan.skipped_ok += 1
        elif status is not None and status != "invalid" and not interrupted and not retry_failed:
            plan.skipped_failed += 1
        else:
            plan.retried += status is not None
            plan.interrupted += interrupted
            plan.todo.append(cfg)
    return plan


class SweepResult(BaseModel):
    total: int = 0
    skipped_ok: int = 0
    skipped_failed: int = 0
    ran: int = 0
    ok: int = 0
    degraded: int = 0
    invalid: int = 0
    failed: int = 0
    held: int = Field(0, description="runs not started because a model they need did not load (model phases); "
                                     "no runs row: a resume runs them")
    not_started: int = Field(0, description="runs not started because the budget would not cover them (sweep.budget); "
                                            "no runs row: a resume with a larger budget runs them")
    budget: str | None = Field(None, description="sweep.budget: what it spent and left out, in one line")
    failures: dict[str, str] = Field(default_factory=dict, description="run_id -> first line of its error")
    error: str | None = Field(None, description="the sweep did not start (invalid configuration)")
    cells: list[dict[str, Any]] = Field(default_factory=list, description="adaptive sweeps: the cells table's rows "
                                                                          "(why each cell stopped)")

    @property
    def exit_code(self) -> int:
        if self.error:
            return 2
        return 1 if self.failed or self.invalid or self.held else 0


@dataclass
class SweepCall:
    """One `masgrid run -m` call's exchange with the masgrid_ray launcher.

    `hydra.main` discards what a launcher returns in multirun mode, and calls the launcher in
    the caller's thread: the CLI makes the current call (`current_sweep_call`) for the time
    `hydra.main` runs; the launcher reads `show_config` and `plan_only` from it and stores
    `result` in it. A context variable scopes it to the call: two sweeps in one process (a
    notebook, threads, the tests) cannot see each other's outcome."""

    show_config: str | None = None  # `--cfg job`: print every job's config instead of running
    plan_only: bool = False  # `--plan`: print the sweep's plan (runs left, model phases), start nothing
    result: SweepResult | None = None


_CURRENT_CALL: ContextVar[SweepCall | None] = ContextVar("masgrid_sweep_call", default=None)


@contextmanager
def current_sweep_call(call: SweepCall) -> Iterator[SweepCall]:
    """`call` is the one the launcher answers while this block runs."""
    token = _CURRENT_CALL.set(call)
    try:
        yield call
    finally:
        _CURRENT_CALL.reset(token)


def sweep_call() -> SweepCall:
    """The caller's SweepCall, or a fresh one when Hydra was started by other code (its result
    then only reaches the caller as Hydra's JobReturns)."""
    return _CURRENT_CALL.get() or SweepCall()


def run_sweep(cfgs: Sequence[RunConfig], settings: SweepSettings,
              on_start: Callable[[], None] | None = None) -> SweepResult:
    """Plan, then execute the remaining runs with at most `settings.max_concurrent` in flight.
    `on_start` is called once the sweep holds its results_dirs and passed preflight, before
    any run starts: what it writes (the launcher's multirun.yaml) a refused sweep never writes."""
    from masgrid._private.platform.sweeps.ray_runs import writer_locks

    with writer_locks(cfgs):  # before planning: a second sweep on the same results_dir is refused here
        return _run_sweep(cfgs, settings, on_start)


def _run_sweep(cfgs: Sequence[RunConfig], settings: SweepSettings,
               on_start: Callable[[], None] | None = None) -> SweepResult:
    from masgrid._private.platform.sweeps.budget import SweepBudget, check_budget
    from masgrid._private.platform.sweeps.progress import SweepProgress

    refused = check_budget(cfgs, settings.budget)
    if refused:
        raise ConfigError(refused)
    budget = SweepBudget(settings.budget) if settings.budget.active else None
    if settings.adaptive.active:
        from masgrid._private.platform.sweeps.adaptive import run_adaptive

        def execute(todo: list[RunConfig], result: SweepResult, note: str) -> None:
            progress = SweepProgress(len(todo), settings.progress, settings.log_every_s)
            progress.note(note)
            _run_pending(todo, settings, result, progress, budget)

        result = run_adaptive(cfgs, settings, on_start, execute, budget)
        _summary(result, cfgs, SweepProgress(0, settings.progress, settings.log_every_s), budget)
        return result
    from masgrid._private.platform.sweeps.model_phases.runner import current_plan, needs_phases
    from masgrid._private.platform.sweeps.preflight import preflight

    plan = plan_sweep(cfgs, settings.retry_failed, settings.retry_invalid)
    if plan.todo:
        phased = needs_phases(plan.todo)
        if phased:  # a model that cannot fit, a team that cannot fit at once, a busy cluster: one line, nothing started
            from masgrid._private.platform.cluster.ray_session import ensure_ray

            ensure_ray(plan.todo[0].execution.ray_address)
            current_plan(plan.todo)
        # PreflightError: one line, nothing started (the launcher reports it); models the sweep
        # deploys itself are checked as each phase loads them
        preflight(plan.todo, served=not phased)
    if on_start is not None:
        on_start()
    if budget is not None:
        budget.include(cfgs)
    result = SweepResult(total=plan.total, skipped_ok=plan.skipped_ok, skipped_failed=plan.skipped_failed)
    progress = SweepProgress(len(plan.todo), settings.progress, settings.log_every_s)
    progress.note(f"sweep: {plan.total} runs in the grid; {plan.skipped_ok} already complete, "
                  f"{plan.skipped_failed} recorded as failed and left alone"
                  f"{' (sweep.retry_failed=true re-runs them)' if plan.skipped_failed else ''}, "
                  f"{len(plan.todo)} to run ({plan.retried} retries"
                  f"{f', {plan.interrupted} of them interrupted' if plan.interrupted else ''}), "
                  f"{in_flight_rule(settings, plan.todo)}")
    if budget is not None:
        progress.note(budget.opening())
    _run_pending(plan.todo, settings, result, progress, budget)
    _summary(result, cfgs, progress, budget)
    return result


def _run_pending(todo: list[RunConfig], settings: SweepSettings, result: SweepResult, progress: SweepProgress,
                 budget: SweepBudget | None = None) -> None:
    """Run `todo` (at most max_concurrent at once), counting each outcome into `result`; runs
    needing models the sweep deploys go in model phases (platform/sweeps/model_phases)."""
    from masgrid._private.platform.cluster.ray_session import ensure_ray
    from masgrid._private.platform.sweeps.ray_runs import run_many
    from masgrid._private.platform.sweeps.model_phases.runner import PhaseRunner, needs_phases

    def on_done(cfg: RunConfig, summary: Any) -> None:
        result.ran += 1
        status = summary.status if summary.status in ("ok", "degraded", "invalid") else "failed"
        setattr(result, status, getattr(result, status) + 1)
        if status in ("invalid", "failed"):
            result.failures[cfg.run_id] = (summary.error or "unknown error").splitlines()[0]
        progress.advance(status=status)

    def hold(cfg: RunConfig, why: str) -> None:
        result.held += 1
        result.failures[cfg.run_id] = why
        progress.advance(status="failed")

    if todo:
        ensure_ray(todo[0].execution.ray_address)
    progress.start()
    todo = [c.model_copy(update={"execution": c.execution.model_copy(update={"reuse_actors": True})})
            if settings.reuse_actors else c for c in todo]  # placement only: run ids unchanged
    keep_warm = settings.reuse_actors and all(c.execution.keep_warm for c in todo)

    def execute(runs: list[RunConfig], done: Callable[[RunConfig, Any], None]) -> None:
        # on a cluster that outlives the command, the sweep's processes stay warm for the next one
        run_many(runs, max_concurrent=settings.max_concurrent, on_done=done, admission=settings.admission,
                 keep_warm=keep_warm, gate=budget)

    try:
        if needs_phases(todo):  # models the sweep deploys itself: in phases that fit the cluster
            PhaseRunner(execute, on_done, hold, progress.note).run(todo)
        else:
            execute(todo, on_done)
    finally:
        progress.stop()


def in_flight_rule(settings: SweepSettings, todo: Sequence[RunConfig]) -> str:
    """How many runs the sweep keeps in flight, in words (its first progress line)."""
    if any(c.execution.prefix_cache == "reset_per_run" for c in todo):
        return "one run at a time per engine, each on a reset prefix cache (execution.prefix_cache=reset_per_run)"
    fixed = settings.max_concurrent or FIXED_DEFAULT
    if settings.admission == "fixed" or not any(c.agent_endpoints() for c in todo):
        return f"at most {fixed} at once"
    return (f"as many at once as each engine's load admits, at most {settings.max_concurrent or AUTO_CEILING} "
            "(sweep.admission=load)")


def _summary(result: SweepResult, cfgs: Sequence[RunConfig], progress: SweepProgress,
             budget: SweepBudget | None = None) -> None:
    results_dirs = sorted({c.results_dir for c in cfgs})
    if budget is not None:
        result.not_started, result.budget = len(budget.not_started), budget.line()
    progress.note(f"sweep done: ran {result.ran} (ok {result.ok}, degraded {result.degraded}, invalid "
                  f"{result.invalid}, failed {result.failed}), "
                  + (f"held {result.held} (a model they need did not load), " if result.held else "")
                  + (f"not started {result.not_started} (over budget), " if result.not_started else "")
                  + f"skipped {result.skipped_ok + result.skipped_failed}; results in "
                  + ", ".join(f"{d}/runs" for d in results_dirs))
    if result.cells:
        reasons: dict[str, int] = {}
        for row in result.cells:
            reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
        progress.note(f"adaptive: {len(result.cells)} cells, {sum(r['n_seeds'] for r in result.cells)} runs; stopped: "
                      + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
                      + "; table in " + ", ".join(f"{d}/cells" for d in results_dirs))
    for run_id, err in result.failures.items():
        progress.note(f"  {run_id}: {err}", err=True)
    if result.budget:
        progress.note(result.budget)


def describe_plan(cfgs: Sequence[RunConfig], settings: SweepSettings) -> str:
    """`masgrid run -m ... --plan`: the runs left to run and, for models the sweep deploys, its
    phases on the cluster this command would join (or, with none running, the allocation the
    presets declare, else this machine), starting nothing."""
    from masgrid._private.platform.sweeps.model_phases.runner import needs_phases

    plan = plan_sweep(cfgs, settings.retry_failed, settings.retry_invalid)
    lines = [f"sweep: {plan.total} runs in the grid; {plan.skipped_ok} already complete, {plan.skipped_failed} recorded "
             f"as failed and left alone, {len(plan.todo)} to run ({plan.retried} retries)"]
    if needs_phases(plan.todo):
        lines.append(_phase_plan_text(plan.todo))
    elif plan.todo:
        lines.append("model phases: none (no run needs a model this sweep deploys)")
    if plan.todo:
        from masgrid._private.platform.sweeps.budget import cost_plan

        lines += cost_plan(cfgs, plan.todo, settings.budget)
    return "\n".join(lines)


def _phase_plan_text(todo: Sequence[RunConfig]) -> str:
    import os

    from masgrid._private.platform.cluster.head import resolve_address
    from masgrid._private.platform.sweeps.model_phases.capacity import Cluster, Node, declared_cluster
    from masgrid._private.platform.sweeps.model_phases.plan import managed_models, plan_phases
    from masgrid._private.platform.sweeps.model_phases.runner import current_plan

    address, joins = resolve_address(todo[0].execution.ray_address)
    if joins:
        from masgrid._private.platform.cluster.ray_session import ensure_ray

        ensure_ray(address)
        return current_plan(todo).text()
    demands = [d for c in todo for d in managed_models(c)]
    cluster = declared_cluster(demands) or Cluster([Node("local", {"CPU": float(os.cpu_count() or 1)},
                                                        "this machine")], source="this machine (no cluster running)")
    return plan_phases(todo, cluster).text()


def collapsed_keys(cfgs: Sequence[RunConfig], settings: Sequence[SweepSettings] = ()) -> list[str]:
    """Dotted keys the grid varies that cannot tell its runs apart.

    Jobs with the same (results_dir, run_id) are one run; if their full configs differ, the
    grid varies a key outside the run's identity (model.base_url, execution.*, ...) and
    planning would silently keep one of them. Exact duplicates are fine. Sweep settings
    apply to the whole sweep, so any `sweep.*` that differs between jobs is named too.
    """
    first: dict[tuple[str, str], RunConfig] = {}
    keys: set[str] = set()
    for cfg in cfgs:
        ref = first.setdefault((cfg.results_dir, cfg.run_id), cfg)
        if ref is not cfg:
            keys |= _differing(ref.model_dump(mode="json"), cfg.model_dump(mode="json"))
    for other in settings[1:]:
        keys |= {f"{SWEEP_KEY}.{k}" for k in _differing(settings[0].model_dump(), other.model_dump())}
    return sorted(top_level_name(key) for key in keys)  # `mode`, as users write it


def _differing(a: Any, b: Any, prefix: str = "") -> set[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return {k for key in a.keys() | b.keys()
                for k in _differing(a.get(key), b.get(key), f"{prefix}{key}.")}
    return set() if a == b else {prefix.rstrip(".")}


def collapse_error(keys: Sequence[str], cfgs: Sequence[RunConfig] = ()) -> str:
    """The one line refusing a grid that varies keys outside the run identity; a key the
    grid's task ignores (`Task.ignored_keys`, e.g. SILO's mode) is named as such."""
    ignored: dict[str, set[str]] = {}
    for cfg in cfgs:
        for key in set(keys) & set(get_task(cfg.task).ignored_keys):
            ignored.setdefault(key, set()).add(cfg.task)
    parts = []
    other = [key for key in keys if key not in ignored]
    if other:
        parts.append(f"the sweep varies {', '.join(other)}, which is not part of a run's identity; "
                     "jobs differing only there would collapse into one run. Sweep it in separate commands, "
                     "each with its own results_dir")
    by_tasks: dict[tuple[str, ...], list[str]] = {}
    for key, tasks in sorted(ignored.items()):
        by_tasks.setdefault(tuple(sorted(tasks)), []).append(key)
    for task_names, names in by_tasks.items():
        parts.append(f"the sweep varies {', '.join(names)}, which task {', '.join(task_names)} ignores (not part of its "
                     "runs' identity): the jobs would repeat one run, not replicate it. Vary seed for repeats")
    return "masgrid run: " + "; ".join(parts)


def report_config_errors(errors: list[tuple[str, str]]) -> str:
    """One message for every invalid job of a grid: `overrides` then the field errors."""
    lines = [f"{len(errors)} job(s) of the sweep have an invalid configuration; nothing was run:"]
    for overrides, msg in errors:
        lines.append(f"- {overrides}")
        lines.extend("    " + line for line in msg.splitlines())
    text = "\n".join(lines)
    log.error("%s", text)
    return text
