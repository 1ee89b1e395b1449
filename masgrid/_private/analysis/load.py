"""Load a results directory into pandas DataFrames."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from masgrid._private.analysis.integrity import Damage, check_results, read_log

TABLES = ("runs", "agents", "events")


@dataclass
class Results:
    runs: pd.DataFrame
    agents: pd.DataFrame
    events: pd.DataFrame
    #: damaged files found (and set aside) by this load
    damaged: list[Damage] = field(default_factory=list)
    #: every file the quarantine log lists (this load's and earlier ones, e.g. a resume's);
    #: what a report lists, since files are set aside before anything is loaded
    quarantined: list[Damage] = field(default_factory=list)


def read_table(results_dir: str | Path, table: str) -> pd.DataFrame:
    """One table with partition columns as plain strings (not categoricals). A damaged file
    is set aside (analysis/integrity.py) and the table read again without it."""
    path = Path(results_dir) / table
    if not path.is_dir() or not any(path.rglob("part-*.parquet")):
        return pd.DataFrame()
    try:
        df = _read_all_columns(path)
    except Exception:
        # a footer that reads back can still hide damaged data pages: then read this table's files whole
        if not (check_results(results_dir) or check_results(results_dir, deep=True, tables=(table,))):
            raise
        return read_table(results_dir, table)
    for key in ("task", "protocol"):
        if key in df.columns:
            df[key] = df[key].astype(str)
    return df


def _read_all_columns(path: Path) -> pd.DataFrame:
    """The table with the union of every file's columns. A results_dir filled across masgrid
    versions (or families) holds files with more columns than older ones; pandas' reader
    takes the first file's schema and would silently drop the newer columns. Older files read
    as null where they lack a column; a column whose type widened is promoted."""
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    factory = ds.FileSystemDatasetFactory(
        pafs.LocalFileSystem(), pafs.FileSelector(str(path), recursive=True), ds.ParquetFileFormat(),
        ds.FileSystemFactoryOptions(partitioning=ds.HivePartitioning.discover(infer_dictionary=False),
                                    selector_ignore_prefixes=[".", "_"]))
    schema = factory.inspect(promote_options="permissive", fragments=None)  # None: every file
    table = factory.finish(schema).to_table()
    return table.to_pandas()


def load_results(results_dir: str | Path, completed_only: bool = True) -> Results:
    """runs/agents/events; with `completed_only`, rows of runs without a `runs` row are dropped
    (left by an interrupted attempt that a resume will redo)."""
    damaged = check_results(results_dir) if Path(results_dir).is_dir() else []
    # runs last: a damaged agents or events file found while reading sets its run's runs file aside
    agents = read_table(results_dir, "agents")
    events = read_table(results_dir, "events")
    runs = read_table(results_dir, "runs")
    if completed_only and not runs.empty:
        done = set(runs["run_id"])
        agents = agents[agents["run_id"].isin(done)] if not agents.empty else agents
        events = events[events["run_id"].isin(done)] if not events.empty else events
    return Results(runs=runs, agents=agents, events=events, damaged=damaged, quarantined=read_log(results_dir))
