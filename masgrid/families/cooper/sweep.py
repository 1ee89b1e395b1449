"""`masgrid cooper sweep SUBSET`: every grid point of a CooperBench subset list, as one sweep.

A subset list (`<data_dir>/subsets/<name>.json`: lite, flash_10, team3_clean, ...) names
tasks and, per task, its pairs, its 3-4 feature groups, or nothing (every pair of the pool).
Hydra's sweeper only forms cartesian products, so it cannot say "these features of this
task, those of that one"; this command forms the grid itself and hands it to the same
`run_sweep` a `masgrid run -m` uses (same resume, preflight, progress and recording).

Each grid point's config is composed by Hydra from the command's overrides plus `task`,
`cooper.setting` and `cooper.features`, exactly as `masgrid run -m task=cooper/<pool>/<id>
cooper.setting=<s> cooper.features=[...]` would compose it, so run ids, and with them
resume, are the same whichever way a point was launched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from masgrid.families.cooper.layout import CooperDataError, load_subset
from masgrid.sdk.sweeps import ConfigError, RunConfig, SweepSettings, split_job_config

SETTINGS = ("coop", "solo", "nocomm")


def _compose(overrides: list[str]) -> dict[str, Any]:
    """One job config as `masgrid run` composes it (call inside `initialize_config_dir`)."""
    from masgrid.sdk.sweeps import compose_job

    return compose_job(overrides)[0]


def subset_configs(subset: str, settings: list[str], overrides: list[str]) -> tuple[list[RunConfig], SweepSettings]:
    """The grid's run configs (subset points x settings, in the list's order) and the sweep
    settings. ConfigError or CooperDataError (one line each) on bad input."""
    unknown = [s for s in settings if s not in SETTINGS]
    if not settings or unknown:
        raise ConfigError(f"--settings takes some of {','.join(SETTINGS)}, not {','.join(settings) or 'nothing'}")
    owned = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") in ("task", "cooper.features", "cooper.setting")]
    if owned:
        raise ConfigError(f"the subset list sets task, cooper.features and cooper.setting; drop {' '.join(owned)}")
    if not any(o.split("=", 1)[0].lstrip("+~") == "protocol" for o in overrides):
        overrides = [*overrides, "protocol=workspace"]  # cooper's only protocol (as sweep=cooper sets it)
    from hydra import initialize_config_dir

    from masgrid.sdk.resources import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="masgrid"):
        data_dir = (_compose(overrides).get("cooper") or {}).get("data_dir")
        if not data_dir:
            raise ConfigError("cooper.data_dir=DIR is needed: the dataset holding subsets/<name>.json")
        points = load_subset(Path(data_dir), subset)
        if not points:
            raise CooperDataError(f"subset list {subset!r} names no grid points")
        cfgs: list[RunConfig] = []
        sweep: SweepSettings | None = None
        for pool, task_id, features in points:
            for setting in settings:
                cfg, sweep = split_job_config(_compose([
                    *overrides, f"task=cooper/{pool}/{task_id}", f"cooper.setting={setting}",
                    f"cooper.features=[{','.join(str(f) for f in features)}]"]))
                cfgs.append(cfg)
    assert sweep is not None
    return cfgs, sweep


USAGE = ("usage: masgrid cooper sweep SUBSET [--settings coop,solo,nocomm] cooper.data_dir=DIR "
         "[key=value ...]   (every grid point of <DIR>/subsets/SUBSET.json)")


def sweep_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="masgrid cooper sweep", add_help=False)
    parser.add_argument("subset")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--dry-run", action="store_true", help="list the grid points, run nothing")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    args, overrides = parser.parse_known_args(argv)
    flags = [o for o in overrides if o.startswith("-")]
    if flags:
        print(f"masgrid cooper sweep: unknown option {flags[0]}\n{USAGE}", file=sys.stderr)
        return 2
    from masgrid.sdk.sweeps import EngineLost, PreflightError, ResultsDirBusy

    try:
        cfgs, settings = subset_configs(args.subset, [s for s in args.settings.split(",") if s], overrides)
        if args.dry_run:
            for cfg in cfgs:
                print(f"{cfg.run_id}  {cfg.task}  setting={cfg.cooper.setting}  features={cfg.cooper.features}")
            return 0
        from masgrid.sdk.sweeps import run_sweep

        result = run_sweep(cfgs, settings)
    except (ConfigError, CooperDataError, PreflightError, ResultsDirBusy, EngineLost) as exc:
        first = str(exc).strip().splitlines()
        print(f"masgrid cooper sweep: {' '.join(line.strip() for line in first)}", file=sys.stderr)
        return 2
    return result.exit_code
