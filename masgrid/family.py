"""Benchmark families as plugins: the `Family` description and the registry that finds them.

A family (MAS-Bench, SILO, ...) is one folder that hands masgrid a `Family` object through
the entry-point group `masgrid.families` (masgrid's own five are declared in its
pyproject.toml the same way a third-party package declares its own). Core code never names a
family: every list of families, metric columns, option blocks, reports, site panels and CLI
subcommands is built from this registry.

Loading is explicit and complete: the first question to the registry loads every entry
point, so the answer never depends on what a process happened to import. A `Family` refers
to its heavy parts (tasks, report writer, site panel, CLI) by `"module:attribute"` strings,
imported only when used, so loading the registry stays cheap.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

logger = logging.getLogger(__name__)

#: the entry-point group families are found in
ENTRY_POINT_GROUP = "masgrid.families"


#: the column types a family may declare (timestamps and lists are the core tables' own)
SCALAR_TYPES = ("bool", "int64", "float64", "string")


class Metric(BaseModel):
    """One column of a results table: its type, unit and meaning (the one source for the
    Parquet schema, docs/results.md and the tables' column notes). Families declare their run
    columns with it, and the core declares every column of its three tables the same way. The
    type is named, not an Arrow object, so declaring a family imports no Arrow (`masgrid run`
    starts without it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["bool", "int64", "float64", "string", "timestamp", "list<string>", "list<int64>"]
    meaning: str
    unit: str = "-"

    def arrow_type(self) -> Any:
        import pyarrow as pa

        return {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(), "string": pa.string(),
                "timestamp": pa.timestamp("us", tz="UTC"), "list<string>": pa.list_(pa.string()),
                "list<int64>": pa.list_(pa.int64())}[self.type]


class CliCommand(BaseModel):
    """A `masgrid <name> ...` subcommand a family adds."""

    model_config = ConfigDict(frozen=True)

    target: str = Field(description="'module:function' taking the argument list, returning an exit code")
    usage: str = Field(description="the line `masgrid --help` shows after the command's name")


class Family(BaseModel):
    """What masgrid needs to know about a benchmark family.

    References to code are `"module:attribute"` strings (or a module path for `tasks` and the
    `protocols`/`schedules` providers): importing them is left until they are needed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="key of the family: its option block and folder")
    label: str = Field(description="the name reports print, e.g. 'My-Bench'")
    order: int = Field(100, description="position in reports and in the run table's columns (built-ins 0-4)")
    paper: str | None = Field(None, description="the paper the family reproduces, one line")
    tasks: str = Field(description="module whose import registers the family's tasks")
    task_names: tuple[str, ...] = Field((), description="exact task names the family provides")
    task_prefixes: tuple[str, ...] = Field((), description="task-name prefixes it provides, e.g. 'mybench/'")
    options: type[BaseModel] | None = Field(
        None, description="pydantic model of the family's option block `<name>:` in the run config")
    metrics: Mapping[str, Metric] = Field(default_factory=dict, description="run-table columns it adds")
    top_level: Mapping[str, Metric] = Field(
        default_factory=dict, description="fields of `options` a config may also set at the top level "
        "(`<key>=v` for `<family>.<key>=v`), each recorded as a runs column of that name")
    protocols: Mapping[str, str] = Field(default_factory=dict, description="protocol name -> module registering it")
    schedules: Mapping[str, str] = Field(default_factory=dict, description="schedule name -> module registering it")
    default_protocol: str | None = Field(None, description="protocol used when the config sets none")
    report: str | None = Field(
        None, description="'module:function' (results_dir, out_dir) -> written files, index first")
    site_panel: str | None = Field(
        None, description="'module:function' (run row, agent rows, events, scoring) -> JSON-able panel dict "
        "with a `kind` the family's site script renders")
    site_script: str | None = Field(None, description="JS file, relative to the family's folder, rendering its panel")
    site_score: tuple[str, str] | None = Field(None, description="(column, label) of the site index's score")
    headline: str = Field("sr", description="the run column `masgrid report`'s overview shows as SR%")
    headline_note: str | None = Field(None, description="what the overview's SR% means for this family, "
                                                        "when not the mean per-agent success rate")
    compare: tuple[tuple[str, ...], tuple[str, ...]] | None = Field(
        None, description="(cell keys, metrics) of `masgrid report A B`")
    cli: Mapping[str, CliCommand] = Field(default_factory=dict, description="subcommands `masgrid <name>`")
    conf: str | None = Field(None, description="config folder (relative to the family's folder) added to "
                                               "Hydra's search path: its sweeps and model presets")
    docs: str | None = Field(None, description="the family's documentation page")
    #: the folder the family's package lives in (set by the registry)
    folder: Path | None = None

    @field_validator("task_prefixes")
    @classmethod
    def _prefixes_end_in_slash(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in value:
            if not prefix.endswith("/"):
                raise ValueError(f"task prefix {prefix!r} must end with '/'")
        return value

    @field_validator("options")
    @classmethod
    def _options_need_no_arguments(cls, value: type[BaseModel] | None) -> type[BaseModel] | None:
        """A run that does not mention the block gets `options()`: every field needs a default."""
        if value is not None:
            try:
                value()
            except Exception as exc:  # noqa: BLE001 - pydantic's report, shortened to one line
                first = str(exc).splitlines()
                raise ValueError(f"options {value.__name__} must build with no arguments (give every field a "
                                 f"default): {' '.join(line.strip() for line in first[:3])}") from None
        return value

    @field_validator("metrics", "top_level")
    @classmethod
    def _columns_are_scalars(cls, value: Mapping[str, Metric]) -> Mapping[str, Metric]:
        wrong = sorted(name for name, column in value.items() if column.type not in SCALAR_TYPES)
        if wrong:
            raise ValueError(f"columns {wrong}: a family's columns are one of {', '.join(SCALAR_TYPES)}")
        return value

    @field_validator("top_level")
    @classmethod
    def _top_level_keys_are_options(cls, value: Mapping[str, Metric], info: ValidationInfo) -> Mapping[str, Metric]:
        options = info.data.get("options")
        missing = [key for key in value if options is None or key not in options.model_fields]
        if missing:
            raise ValueError(f"top_level keys {missing} are not fields of the family's options")
        return value

    def claims(self, task: str) -> bool:
        """Whether a task name belongs to this family."""
        return task in self.task_names or any(task.startswith(p) for p in self.task_prefixes)

    def load_tasks(self) -> None:
        importlib.import_module(self.tasks)

    def site_script_path(self) -> Path | None:
        return None if self.site_script is None or self.folder is None else self.folder / self.site_script

    def conf_path(self) -> Path | None:
        return None if self.conf is None or self.folder is None else self.folder / self.conf


def resolve(target: str) -> Callable[..., Any]:
    """The object a `"module:attribute"` string names."""
    module, _, attribute = target.partition(":")
    if not attribute:
        raise ValueError(f"{target!r}: expected 'module:attribute'")
    value: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return value


class FamilyError(RuntimeError):
    """A family plugin that cannot be loaded or clashes with another: one line naming it."""


_lock = threading.Lock()
_families: dict[str, Family] | None = None


def _load() -> dict[str, Family]:
    found: list[Family] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            family = ep.load()
        except Exception as exc:
            raise FamilyError(f"family plugin {ep.name} ({ep.value}) does not load: "
                              f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(family, Family):
            raise FamilyError(f"family plugin {ep.name} ({ep.value}) is a {type(family).__name__}, not a Family")
        if family.name != ep.name:
            raise FamilyError(f"family plugin {ep.name} ({ep.value}) calls itself {family.name!r}")
        module = importlib.import_module(ep.value.partition(":")[0])
        folder = Path(module.__file__ or ".").resolve().parent
        found.append(family.model_copy(update={"folder": folder}))
    found.sort(key=lambda f: (f.order, f.name))
    families: dict[str, Family] = {}
    owners: dict[str, str] = {}
    for family in found:
        if family.name in families:
            raise FamilyError(f"family {family.name!r} is provided twice")
        families[family.name] = family
        for column in [*family.metrics, *family.top_level]:
            if column in owners:
                raise FamilyError(f"column {column!r} is declared by both {owners[column]} and {family.name}")
            owners[column] = family.name
    if not families:
        raise FamilyError(f"no benchmark family found in entry-point group {ENTRY_POINT_GROUP!r}: "
                          "is masgrid installed (pip install -e .)?")
    logger.debug("families: %s", ", ".join(families))
    return families


def families() -> dict[str, Family]:
    """Every installed family, name -> Family, in report order (loaded once per process)."""
    global _families
    if _families is None:
        with _lock:
            if _families is None:
                _families = _load()
    return _families


def get_family(name: str) -> Family:
    try:
        return families()[name]
    except KeyError:
        raise KeyError(f"unknown family {name!r}; installed: {', '.join(families())}") from None


_owners: tuple[int, dict[str, Family | None]] = (0, {})


def family_of(task: str) -> Family | None:
    """The family a task name belongs to; None when no family claims it. Remembered per task
    name (analysis asks once per row), for as long as the loaded registry is the same."""
    global _owners
    table = families()
    if _owners[0] != id(table):
        _owners = (id(table), {})
    cache = _owners[1]
    key = str(task)
    if key not in cache:
        cache[key] = next((family for family in table.values() if family.claims(key)), None)
    return cache[key]


def family_metrics() -> dict[str, Metric]:
    """Every family's metric columns, in family order."""
    return {name: metric for family in families().values() for name, metric in family.metrics.items()}


def default_task() -> str:
    """The task of a config that names none: the first task of the first family (in report
    order) that names its tasks; `masgrid run`'s conf/config.yaml names its own."""
    for family in families().values():
        if family.task_names:
            return family.task_names[0]
    raise FamilyError("no installed family names a task: give the config a task")


def top_level_keys() -> dict[str, Family]:
    """Option fields a config may set at the top level (`Family.top_level`): key -> its family.
    They sat at the top of every config before they moved into their family's block, so run ids
    keep them there (RunConfig.identity) and the runs table keeps their columns."""
    return {key: family for family in families().values() for key in family.top_level}


def block_key(key: str) -> str:
    """A family's top-level key as its block holds it (`mode` -> `masbench.mode`); any other
    key unchanged."""
    owner = top_level_keys().get(key)
    return f"{owner.name}.{key}" if owner is not None else key


def top_level_name(key: str) -> str:
    """A block key as users may write it (`masbench.mode` -> `mode`); any other key unchanged."""
    family, dot, name = key.partition(".")
    owner = top_level_keys().get(name) if dot else None
    return name if owner is not None and owner.name == family else key


def family_columns() -> dict[str, Metric]:
    """Every family's top-level option columns (`Family.top_level`), in family order."""
    return {key: column for family in families().values() for key, column in family.top_level.items()}


__all__ = ["ENTRY_POINT_GROUP", "CliCommand", "Family", "FamilyError", "Metric", "families", "family_columns",
           "family_metrics", "family_of", "get_family", "resolve", "top_level_keys", "default_task", "block_key", "top_level_name"]
