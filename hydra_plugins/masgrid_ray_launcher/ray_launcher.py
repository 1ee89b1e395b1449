"""`hydra/launcher=masgrid_ray`: compose and validate every job, then hand the grid to masgrid.

Why our own launcher rather than hydra-ray-launcher (1.2.2 on PyPI): that plugin's
requirements admit Ray 2.x, but it ships one Ray task per job running the whole Hydra task
function (here: a driver that itself starts actors), has no bound on concurrent jobs other
than CPU reservations, composes configs one by one while submitting, and knows nothing of
results already recorded. masgrid's unit of work is a driver actor (`ray_runs.run_many`),
so this launcher only composes: every job config is built and validated first (all
errors reported, nothing started; `masgrid._private.platform.sweeps.compose` composes once per config-group
choice, not once per job), a grid whose jobs would collapse into one run is refused, then
`masgrid._private.platform.sweeps.sweep.run_sweep` skips recorded runs and keeps as many drivers in
flight as the engines' load admits (`sweep.admission`), at most `sweep.max_concurrent`.
"""


import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from hydra._internal.core_plugins import basic_sweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


@dataclass
class MasgridRayLauncherConf:
    _target_: str = "hydra_plugins.masgrid_ray_launcher.ray_launcher.MasgridRayLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="masgrid_ray", node=MasgridRayLauncherConf,
                             provider="masgrid")


@dataclass
class MasgridSweeperConf:
    _target_: str = "hydra_plugins.masgrid_ray_launcher.ray_launcher.MasgridSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


ConfigStore.instance().store(group="hydra/sweeper", name="masgrid_basic", node=MasgridSweeperConf,
                             provider="masgrid")


class MasgridSweeper(basic_sweeper.BasicSweeper):
    """Hydra's basic grid sweeper without its own check of every job, and without writing.

    Before each batch, BasicSweeper composes every job fully just to see that it composes
    (`validate_batch_is_legal`): 0.1-0.2 s a job, 5-10 minutes for `sweep=masbench`
    before the launcher even starts. The masgrid_ray launcher composes and validates
    every job itself, reporting every failure before anything runs, so the check is skipped.

    BasicSweeper also creates `hydra.sweep.dir` (results_dir/.multirun) and saves
    multirun.yaml there before any job is validated, so a refused sweep (invalid job, a
    results_dir held by another sweep) would still create results_dir or overwrite the
    record of the sweep that holds it. Here the launcher saves it once the sweep starts.
    """

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        return None

    def sweep(self, arguments: list[str]) -> Any:
        """BasicSweeper.sweep (Hydra 1.3) minus the sweep directory and multirun.yaml."""
        assert self.config is not None and self.launcher is not None and self.hydra_context is not None
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(parser.parse_overrides(params_conf), self.max_batch_size)
        returns: list[Sequence[JobReturn]] = []
        initial_job_idx = 0
        while not self.is_done():
            batch = self.get_job_batch()
            results = self.launcher.launch(batch, initial_job_idx=initial_job_idx)
            for r in results:
                _ = r.return_value  # raises if the job failed, as BasicSweeper does
            initial_job_idx += len(batch)
            returns.append(results)
        return returns


class MasgridRayLauncher(Launcher):
    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from masgrid._private.platform.sweeps.compose import JobComposer
        from masgrid._private.actors.serving.spec import ServingError, ServingUnavailable
        from masgrid._private.platform.run.config import ConfigError
        from masgrid._private.platform.cluster.engine_alive import EngineLost
        from masgrid._private.platform.sweeps.preflight import PreflightError, check_results_dir
        from masgrid._private.platform.results.storage import ResultsUnwritable
        from masgrid._private.platform.results.results_lock import ResultsDirBusy
        from masgrid._private.platform.sweeps.model_phases.cluster_state import PhasesBusy
        from masgrid._private.platform.sweeps.model_phases.plan import PhasePlanError
        from masgrid._private.platform.sweeps.sweep import (SweepResult, collapse_error, collapsed_keys, describe_plan,
                                                     report_config_errors, run_sweep, split_job_config, sweep_call)

        assert self.hydra_context is not None and self.config is not None
        setup_globals()
        call = sweep_call()  # the caller's: show_config in, result out
        show = call.show_config
        if not job_overrides:
            call.result = SweepResult(error=_fail("masgrid run: the sweep expands to no job "
                                                  "(an empty value list among the overrides?); nothing was run"))
            return []
        composer = JobComposer(self.hydra_context.config_loader, self.config)
        jobs, cfgs, all_settings, errors = [], [], [], []
        for offset, overrides in enumerate(job_overrides):
            idx = initial_job_idx + offset
            shown = " ".join(filter_overrides(overrides)) or "(defaults)"
            try:
                sweep_config, data = composer.compose(overrides, idx)
                if show:
                    print(f"# job {idx}: {shown}\n{OmegaConf.to_yaml(data)}", flush=True)
                    continue
                cfg, job_settings = split_job_config(data)
            except ConfigError as exc:
                errors.append((shown, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - interpolation or composition errors, per job
                errors.append((shown, f"{type(exc).__name__}: {exc}"))
                continue
            jobs.append((overrides, sweep_config, cfg))
            cfgs.append(cfg)
            all_settings.append(job_settings)
        if errors:
            call.result = SweepResult(total=len(job_overrides), error=report_config_errors(errors))
            return []
        if show:
            call.result = SweepResult(total=len(job_overrides))
            return []
        collapsed = collapsed_keys(cfgs, all_settings)
        if collapsed:
            call.result = SweepResult(total=len(job_overrides), error=_fail(collapse_error(collapsed, cfgs)))
            return []
        refused = None
        if all_settings[0].adaptive.active:  # a grid the stopping rule cannot take
            from masgrid._private.platform.sweeps.adaptive import check_adaptive

            refused = check_adaptive(cfgs, all_settings[0])
        if refused is None:  # a budget in money over a model without a price
            from masgrid._private.platform.sweeps.budget import check_budget

            refused = check_budget(cfgs, all_settings[0].budget)
        if refused:
            call.result = SweepResult(total=len(job_overrides), error=_fail(refused))
            return []
        if call.plan_only:
            try:
                print(describe_plan(cfgs, all_settings[0]), flush=True)
            except (PhasePlanError, ServingError) as exc:
                call.result = SweepResult(total=len(job_overrides), error=_fail(f"masgrid run: {exc}"))
                return []
            call.result = SweepResult(total=len(job_overrides))
            return []
        try:
            for results_dir in sorted({cfg.results_dir for cfg in cfgs}):
                check_results_dir(results_dir)  # creates it (not its parent): the grid is valid now
            result = run_sweep(cfgs, all_settings[0], on_start=self._save_sweep_config)
        except (PreflightError, ServingError, ServingUnavailable, ResultsDirBusy, ResultsUnwritable,
                EngineLost, PhasePlanError, PhasesBusy) as exc:
            # bad, undeployable or lost endpoint, results_dir busy or refusing writes, models that
            # cannot fit the cluster, another sweep swapping models on it
            call.result = SweepResult(total=len(job_overrides), error=_fail(f"masgrid run: {exc}"))
            return []
        call.result = result
        returns = []
        for overrides, sweep_config, cfg in jobs:
            ret = JobReturn(overrides=list(overrides), cfg=None, hydra_cfg=sweep_config,
                            working_dir=cfg.results_dir, task_name="masgrid run", status=JobStatus.COMPLETED)
            ret.return_value = "failed" if cfg.run_id in result.failures else "done"
            returns.append(ret)
        return returns

    def _save_sweep_config(self) -> None:
        """hydra.sweep.dir/multirun.yaml, as Hydra's BasicSweeper writes it, but only for a
        sweep that is about to run: it holds its results_dir and passed preflight."""
        from masgrid._private.platform.results.storage import storage_errors

        assert self.config is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        with storage_errors(sweep_dir):
            sweep_dir.mkdir(parents=True, exist_ok=True)
            OmegaConf.save(self.config, sweep_dir / "multirun.yaml")


def _fail(line: str) -> str:
    log.error("%s", line)
    return line
