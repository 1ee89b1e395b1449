"""A sweep's job configs, composed once per config-group choice instead of once per job.

Hydra's launcher API (`ConfigLoader.load_sweep_config`) composes every job from scratch:
defaults list, every YAML file, the whole `hydra` node. That costs 0.07-0.2 s a job, 3-9
minutes for the 2,700 jobs of `sweep=masbench`, and it is repeated on every resume.

Only overrides that choose a config group (`model=...`, `sweep=...`) change the defaults
list; Hydra applies every other override to the composed config afterwards, in command
order (`ConfigLoaderImpl._apply_overrides_to_config`). So a job is its group choices'
config, composed by Hydra once, plus its plain overrides applied the way Hydra applies
them. When the composed config holds only untyped YAML values and no interpolation that
could see an override, and a job's overrides only replace existing scalar leaves, this is
a plain dict update of the resolved config (microseconds). Anything else (appends,
deletions, dict or list values, `${...}` in a value, typed nodes, `${hydra:...}`) goes
through Hydra's own code path. tests/platform/sweeps/test_compose.py checks both paths against
full composition over the sweep presets.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any
from collections.abc import Sequence

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict, read_write
from omegaconf.nodes import AnyNode

_SCALARS = (str, int, float, bool, type(None))
#: interpolations that cannot see another config key (environment variables)
_ENV_ONLY = re.compile(r"\$\{oc\.env:[^${}]*\}")


def hydra_override(override: str) -> str:
    """An override as Hydra needs it for keys masgrid lets users write plainly:

    - `model.<field>=v` for any field of the model settings, also one the chosen preset does
      not list: Hydra refuses a key a preset lacks unless it is written `+model.<field>`, which
      nobody guesses for a documented setting (`model.max_connections`, `model.cache`); it
      becomes `++model.<field>=v` (set, whether the preset has the key or not);
    - a family's top-level option (`Family.top_level`: `mode=desc`) becomes the key in its
      family's block, where Hydra's config has it.
    """
    from masgrid._private.actors.backends.base import BackendSettings
    from masgrid.family import block_key

    key, eq, value = override.partition("=")
    if not eq:
        return override
    head, dot, field = key.partition(".")
    if dot and head == "model" and field in BackendSettings.model_fields:
        return "++" + override
    return f"{block_key(key)}={value}" if not dot else override


def compose_job(overrides: Sequence[str]) -> tuple[dict[str, Any], Any]:
    """(job config without its `hydra` node, resolved; the Hydra run mode the overrides ask for)
    as `masgrid run` composes one job. Call inside `hydra.initialize_config_dir(conf_dir())`:
    a caller composing many jobs initialises Hydra once."""
    from hydra import compose

    overrides = [hydra_override(line) for line in overrides]
    cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    mode = OmegaConf.select(cfg, "hydra.mode")
    with open_dict(cfg):
        del cfg["hydra"]
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    return {str(key): value for key, value in data.items()}, mode


@dataclass
class _Base:
    """One config-group choice, composed by Hydra."""

    sweep_config: DictConfig  # with the hydra node (a Hydra JobReturn wants it)
    task: DictConfig  # the same without the hydra node
    plain: dict[str, Any] | None  # resolved, when plain dict updates reproduce Hydra exactly


class JobComposer:
    """Composes job configs of one multirun exactly as `load_sweep_config` would, fast."""

    def __init__(self, config_loader: Any, master_config: DictConfig) -> None:
        self.loader = config_loader
        self.master = master_config
        self.parser = OverridesParser.create()
        self._parsed: dict[str, Override] = {}
        self._bases: dict[tuple[str, ...], _Base | None] = {}
        self._failed: dict[tuple[str, ...], Exception] = {}
        self.paths: Counter[str] = Counter()  # jobs per path: dict, omegaconf, full (tests, benchmarks)

    def compose(self, overrides: Sequence[str], idx: int) -> tuple[DictConfig, dict[str, Any]]:
        """(hydra-level config, resolved job config without `hydra`) of one job."""
        overrides = [hydra_override(line) for line in overrides]  # a sweep file's `mode: asc,desc`
        parsed = [self._parse(line) for line in overrides]
        repo = getattr(self.loader, "repository", None)
        if repo is None or any(o.is_hydra_override() or _has_interpolation(o) for o in parsed):
            return self.full(overrides, idx)
        groups = [o for o in parsed if repo.group_exists(o.key_or_group) and not isinstance(o.value(), dict)]
        plain = [o for o in parsed if not any(o is g for g in groups)]
        base = self._base(tuple(o.input_line or "" for o in groups))
        if base is None:
            return self.full(overrides, idx)
        if base.plain is not None and all(_scalar_change(o, base.plain) for o in plain):
            data = _copy(base.plain)
            for o in plain:
                *parents, leaf = o.key_or_group.split(".")
                node = data
                for part in parents:
                    node = node[part]
                node[leaf] = o.value()
            self.paths["dict"] += 1
        else:
            from hydra._internal.config_loader_impl import ConfigLoaderImpl

            cfg = copy.deepcopy(base.task)
            ConfigLoaderImpl._apply_overrides_to_config(plain, cfg)
            data = OmegaConf.to_container(cfg, resolve=True)
            self.paths["omegaconf"] += 1
        return base.sweep_config, data

    def full(self, overrides: Sequence[str], idx: int) -> tuple[DictConfig, dict[str, Any]]:
        """Hydra's own per-job composition (the reference the fast path must equal)."""
        self.paths["full"] += 1
        sweep_config = self.loader.load_sweep_config(self.master, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = idx
            sweep_config.hydra.job.num = idx
        HydraConfig.instance().set_config(sweep_config)  # lets ${hydra:...} interpolations resolve
        task = _without_hydra(sweep_config)
        data = OmegaConf.to_container(task, resolve=True)
        assert isinstance(data, dict)
        return sweep_config, data  # type: ignore[return-value]

    def _parse(self, line: str) -> Override:
        if line not in self._parsed:  # the override grammar is slow (ANTLR); lines repeat a lot
            self._parsed[line] = self.parser.parse_overrides([line])[0]
        return self._parsed[line]

    def _base(self, group_lines: tuple[str, ...]) -> _Base | None:
        if group_lines in self._failed:  # e.g. an unknown preset: the same error for every job
            raise self._failed[group_lines]
        if group_lines not in self._bases:
            try:
                sweep_config = self.loader.load_sweep_config(self.master, list(group_lines))
            except Exception as exc:
                self._failed[group_lines] = exc
                raise
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = sweep_config.hydra.job.num = 0
            task = _without_hydra(sweep_config)
            raw = OmegaConf.to_container(task, resolve=False)
            if any("hydra:" in s for s in _strings(raw) if "${" in s):
                self._bases[group_lines] = None  # job-specific hydra values: compose each job fully
                return None
            HydraConfig.instance().set_config(sweep_config)
            exact = _untyped(task) and not any("${" in _ENV_ONLY.sub("", s) for s in _strings(raw))
            plain = OmegaConf.to_container(task, resolve=True) if exact else None
            self._bases[group_lines] = _Base(sweep_config, task, plain)  # type: ignore[arg-type]  # a dict
        return self._bases[group_lines]


def _without_hydra(sweep_config: DictConfig) -> DictConfig:
    task = copy.deepcopy(sweep_config)
    with read_write(task), open_dict(task):
        del task["hydra"]
    return task


def _has_interpolation(o: Override) -> bool:
    return any("${" in s for s in _strings(o.value()))


def _scalar_change(o: Override, data: dict[str, Any]) -> bool:
    """`key=value` replacing an existing scalar leaf with a scalar (what OmegaConf.update does
    to an untyped leaf: store the value as given)."""
    if o.package is not None or o.is_delete() or o.is_add() or o.is_force_add():
        return False
    value = o.value()
    if not isinstance(value, _SCALARS) or value == "???" or "[" in o.key_or_group:
        return False
    node: Any = data
    for part in o.key_or_group.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return isinstance(node, _SCALARS)


def _untyped(node: Any) -> bool:
    """Only plain YAML containers and AnyNode leaves (no structured-config type conversion)."""
    if isinstance(node, DictConfig):
        if node._metadata.object_type not in (None, dict):
            return False
        return all(_untyped(node._get_node(k)) for k in node.keys())
    if isinstance(node, ListConfig):
        return all(_untyped(node._get_node(i)) for i in range(len(node)))
    return isinstance(node, AnyNode)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _copy(value: Any) -> Any:
    """Deep copy of JSON-like data (much cheaper than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def multirun_jobs(overrides: Sequence[str]) -> tuple[JobComposer, list[list[str]]]:
    """The composer and the job overrides of `masgrid run -m OVERRIDES`, built as Hydra's
    multirun builds them (BasicSweeper: the preset's sweeper params, then the command line).
    For tests and benchmarks; the CLI goes through Hydra itself."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra._internal.utils import create_config_search_path
    from hydra.core.utils import setup_globals
    from hydra.types import RunMode

    from masgrid._private.resources import conf_dir

    overrides = [hydra_override(line) for line in overrides]  # as the command line rewrites them
    setup_globals()
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(conf_dir())))
    master = loader.load_configuration("config", list(overrides), RunMode.MULTIRUN)
    params = [f"{key}={value}" for key, value in (master.hydra.sweeper.params or {}).items()]
    parsed = OverridesParser.create().parse_overrides([*params, *overrides])
    batches = BasicSweeper.split_arguments(parsed, None)
    return JobComposer(loader, master), [list(job) for batch in batches for job in batch]
