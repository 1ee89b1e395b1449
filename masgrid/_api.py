"""The Python API behind `masgrid.run`, `masgrid.sweep`, `masgrid.load_results` and
`masgrid.report`: the same composition, identity, resume and validity rules as the CLI, for a
notebook or a script. Everything here blocks until done."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.run_summary import RunSummary
from masgrid._private.platform.sweeps.stopping import AdaptiveSettings
from masgrid._private.platform.sweeps.sweep import SweepResult, SweepSettings

logger = logging.getLogger(__name__)


def _override(key: str, value: Any) -> str:
    if isinstance(value, bool):
        text = str(value).lower()
    elif value is None:
        text = "null"
    elif isinstance(value, (list, tuple)):
        text = "[" + ",".join(_override("_", v).split("=", 1)[1] for v in value) + "]"
    else:
        text = str(value)
    return f"{key}={text}"


def _argv(overrides: Sequence[str], values: Mapping[str, Any]) -> list[str]:
    return [*overrides, *(_override(k.replace("__", "."), v) for k, v in values.items())]


def _compose_all(argvs: Sequence[Sequence[str]]) -> list[tuple[RunConfig, SweepSettings]]:
    """Each override line composed as `masgrid run` composes a job, Hydra initialised once."""
    from hydra import initialize_config_dir

    from masgrid._private.platform.sweeps.compose import compose_job
    from masgrid._private.platform.sweeps.sweep import split_job_config
    from masgrid._private.resources import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="masgrid"):
        return [split_job_config(compose_job(argv)[0]) for argv in argvs]


def compose(*overrides: str, **values: Any) -> tuple[RunConfig, SweepSettings]:
    """A run config as `masgrid run` would compose it: conf/config.yaml, presets (`model=tiny_cpu`)
    and overrides, given as Hydra strings (`"simas.rounds=5"`) or keywords (`agents=5`;
    nested keys with `__`: `simas__rounds=5`). ConfigError (a ValueError) names bad fields."""
    return _compose_all([_argv(overrides, values)])[0]


def _as_config(config: RunConfig | Mapping[str, Any] | None, overrides: Sequence[str],
               values: Mapping[str, Any]) -> RunConfig:
    if config is None:
        return compose(*overrides, **values)[0]
    if overrides or values:
        raise TypeError("give either a config or overrides, not both")
    return config if isinstance(config, RunConfig) else RunConfig.from_mapping(config)


def run(config: RunConfig | Mapping[str, Any] | None = None, *overrides: str, preflight: bool = True,
        **values: Any) -> RunSummary:
    """Run one configuration and return its summary (the runs row is in its results_dir).

    `masgrid.run(task="simas/mmlu", simas__subject="college_physics", agents=3)`, or a RunConfig.
    The endpoint check (preflight) runs first, as on the command line; its PreflightError says
    what is wrong before any actor starts."""
    from masgrid._private.platform.sweeps.ray_runs import run_one
    from masgrid._private.platform.sweeps.preflight import preflight as check

    cfg = _as_config(config, overrides, values)
    if preflight:
        check([cfg])
    return run_one(cfg)


def grid(base: Sequence[str] = (), **axes: Iterable[Any]) -> list[RunConfig]:
    """Every combination of `axes` (keyword -> values; nested keys with `__`) over the base overrides,
    composed and validated like a `masgrid run -m` grid."""
    names = list(axes)
    combos = itertools.product(*(list(v) for v in axes.values()))
    return [cfg for cfg, _ in _compose_all([_argv(base, dict(zip(names, combo))) for combo in combos])]


def sweep(configs: Iterable[RunConfig] | Mapping[str, Iterable[Any]], *base: str, max_concurrent: int | None = None,
          retry_failed: bool = False, retry_invalid: bool = True,
          progress: Literal["auto", "rich", "plain", "off"] = "off",
          adaptive: AdaptiveSettings | Mapping[str, Any] | None = None,
          budget: Mapping[str, Any] | None = None) -> SweepResult:
    """Run a grid with the CLI's resume rule: grid points already recorded ok or degraded are
    skipped, interrupted ones re-run; identities are the same run ids the CLI computes.

    `configs`: RunConfigs, or axes `{"agents": [2, 4], "seed": range(3)}` expanded over `base`
    overrides. Returns the counts (`.ok`, `.failed`, `.failures`, ...); the rows are on disk.

    `adaptive`: stopping rules per grid cell (`{"width": 0.2}` or `{"compare": "condition"}`, docs/adaptive.md);
    the grid then leaves out seed, and `.cells` says why each cell stopped. `max_concurrent`: the ceiling
    on runs in flight (None: as many as each engine's load admits, up to 32; 4 for scripted runs;
    docs/sweeps.md, "Runs in flight"). `budget`: `{"tokens": ...}` and/or `{"usd": ...}` over the whole
    sweep, recorded runs included; `.not_started` counts the runs it left for a resume (docs/hosted-apis.md)."""
    from masgrid._private.platform.sweeps.adaptive import check_adaptive
    from masgrid._private.platform.run.config import ConfigError
    from masgrid._private.platform.sweeps.sweep import collapse_error, collapsed_keys, run_sweep, sweep_settings

    cfgs = grid(base, **configs) if isinstance(configs, Mapping) else list(configs)
    if not cfgs:
        raise ValueError("the sweep has no configuration")
    keys = collapsed_keys(cfgs)
    if keys:
        raise ValueError(collapse_error(keys, cfgs))
    rule = adaptive.model_dump(exclude_unset=True) if isinstance(adaptive, AdaptiveSettings) else dict(adaptive or {})
    settings = sweep_settings({"max_concurrent": max_concurrent, "retry_failed": retry_failed,
                               "retry_invalid": retry_invalid, "progress": progress, "adaptive": rule,
                               "budget": dict(budget or {})})
    refused = check_adaptive(cfgs, settings)
    if refused:
        raise ConfigError(refused)
    return run_sweep(cfgs, settings)


@dataclass
class Results:
    """The three tables of a results directory, as the reports use them.

    `runs` holds the runs the tables use (the validity rule: status ok or degraded, newest
    prompts per grid point, unless `include_invalid`), `note` says in one sentence what was left
    out and why; `all_runs` is every recorded row. `agents` and `events` belong to `runs`.
    `damaged`: every file set aside so far (quarantine/log.jsonl, this load's and earlier ones,
    e.g. a resume's), one line each, as the report index lists them. `cells`: adaptive sweeps' cells
    table (why each grid cell stopped; docs/adaptive.md), empty without one. `phases`: the model
    phases of sweeps that deployed their models (what each loaded, how long; docs/model-phases.md)."""

    runs: pd.DataFrame
    agents: pd.DataFrame
    events: pd.DataFrame
    all_runs: pd.DataFrame
    note: str
    damaged: list[str]
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    phases: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __iter__(self) -> Any:  # runs, agents, events = masgrid.load_results(d)
        return iter((self.runs, self.agents, self.events))


def load_results(results_dir: str | Path, include_invalid: bool = False) -> Results:
    """Load runs, agents and events with the validity filter applied and stated (`note`)."""
    from masgrid._private.analysis.integrity import describe
    from masgrid._private.analysis.load import load_results as load
    from masgrid._private.analysis.usable_runs import exclusion_note, include_invalid as with_invalid, usable

    loaded = load(results_dir)
    every = with_invalid(loaded.runs) if include_invalid else loaded.runs
    runs = usable(every)
    keep = set(runs["run_id"]) if not runs.empty else set()

    def belonging(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["run_id"].isin(keep)] if not frame.empty else frame

    from masgrid._private.analysis.cells import read_cells
    from masgrid._private.analysis.model_phases import read_phases

    return Results(runs=runs, agents=belonging(loaded.agents), events=belonging(loaded.events), all_runs=loaded.runs,
                   note=exclusion_note(every) if not every.empty else "no runs recorded",
                   damaged=describe(loaded.quarantined), cells=read_cells(results_dir),
                   phases=read_phases(results_dir))


def report(results_dir: str | Path, out: str | Path | None = None, include_invalid: bool = False,
           condition: str = "base", site: bool = True) -> Path:
    """Write the report (index, each family's tables and figures) and, with `site`, the HTML
    site; return the report's index (README.md). ValueError when nothing is recorded."""
    from masgrid._private.analysis.report import build_report

    files = build_report(results_dir, out, include_invalid, condition)
    if site:
        from masgrid._private.site.build import build_site

        build_site(results_dir, files[0].parent / "site")
    return files[0]
