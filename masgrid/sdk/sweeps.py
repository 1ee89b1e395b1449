"""Running a family's own sweep command: the run and sweep settings, composing a job from the
conf, and the one-line errors a sweep ends with."""

from masgrid._private.platform.sweeps.compose import compose_job
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.cluster.engine_alive import EngineLost
from masgrid._private.platform.sweeps.preflight import PreflightError
from masgrid._private.platform.results.results_lock import ResultsDirBusy
from masgrid._private.platform.sweeps.sweep import SweepSettings, run_sweep, split_job_config

__all__ = ["ConfigError", "EngineLost", "PreflightError", "ResultsDirBusy", "RunConfig", "SweepSettings", "compose_job",
           "run_sweep", "split_job_config"]
