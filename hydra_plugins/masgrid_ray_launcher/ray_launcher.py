"""`hydra/launcher=masgrid_ray`: compose and validate every job, then hand the grid to masgrid.

Why our own launcher rather than hydra-ray-launcher (1.2.2 on PyPI): that plugin's
requirements admit Ray 2.x, but it ships one Ray task per job running the whole Hydra task
function (here: a driver that itself starts actors), has no bound on concurrent jobs other
than CPU reservations, composes configs one by one while submitting, and knows nothing of
results already recorded. masgrid's unit of work is a driver actor (`launch.run_many`),
so this launcher only composes: every job config is built and validated first (all
errors reported, nothing started), then `masgrid.platform.sweep.run_sweep` skips recorded
runs and keeps at most `sweep.max_concurrent` drivers in flight.
"""


import copy
import logging
from dataclasses import dataclass
from typing import Any, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

log = logging.getLogger(__name__)


@dataclass
class MasgridRayLauncherConf:
    _target_: str = "hydra_plugins.masgrid_ray_launcher.ray_launcher.MasgridRayLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="masgrid_ray", node=MasgridRayLauncherConf,
                             provider="masgrid")


class MasgridRayLauncher(Launcher):
    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def _job_config(self, overrides: Sequence[str], idx: int) -> tuple[DictConfig, dict[str, Any]]:
        assert self.hydra_context is not None and self.config is not None
        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        HydraConfig.instance().set_config(sweep_config)  # lets ${hydra:...} interpolations resolve
        task_cfg = copy.deepcopy(sweep_config)
        with read_write(task_cfg), open_dict(task_cfg):
            del task_cfg["hydra"]
        data = OmegaConf.to_container(task_cfg, resolve=True)
        assert isinstance(data, dict)
        return sweep_config, data  # type: ignore[return-value]

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from masgrid.platform.config import ConfigError
        from masgrid.platform.sweep import (SweepResult, remember, report_config_errors, run_sweep,
                                            split_job_config)

        setup_globals()
        jobs, cfgs, errors = [], [], []
        settings = None
        for offset, overrides in enumerate(job_overrides):
            idx = initial_job_idx + offset
            shown = " ".join(filter_overrides(overrides)) or "(defaults)"
            try:
                sweep_config, data = self._job_config(overrides, idx)
                cfg, job_settings = split_job_config(data)
            except ConfigError as exc:
                errors.append((shown, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - interpolation or composition errors, per job
                errors.append((shown, f"{type(exc).__name__}: {exc}"))
                continue
            settings = settings or job_settings  # the sweep settings are those of the first job
            jobs.append((overrides, sweep_config, cfg))
            cfgs.append(cfg)
        if errors:
            remember(SweepResult(total=len(job_overrides), error=report_config_errors(errors)))
            return []
        assert settings is not None
        result = run_sweep(cfgs, settings)
        remember(result)
        returns = []
        for overrides, sweep_config, cfg in jobs:
            ret = JobReturn(overrides=list(overrides), cfg=None, hydra_cfg=sweep_config,
                            working_dir=cfg.results_dir, task_name="masgrid run", status=JobStatus.COMPLETED)
            ret.return_value = "failed" if cfg.run_id in result.failures else "done"
            returns.append(ret)
        return returns
