"""Parquet recorder: results_dir/{runs,agents,events}, Hive-partitioned, written atomically.

Each file is written under a temporary dot-name (ignored by pyarrow and pandas) and then
renamed into place, so a killed process never leaves a half-written file. File names carry
the run id: a re-executed run replaces its own files instead of duplicating rows, and
the `runs` row, written last, is what marks a run complete.

The recorder keeps no state but its directory, so a recorder actor that dies is restarted
by Ray and the calls it was serving are sent again (ray_runs.recorder_actor): every write
replaces a file named by run id and chunk, so a repeated call changes nothing. A write the
disk refuses (full, read-only) raises `ResultsUnwritable`, which stops the sweep.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any
from collections.abc import Iterable
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from masgrid._private.actors import heap
from masgrid._private.platform.results.sanitize import to_table
from masgrid._private.platform.results.storage import STORAGE_ERRNOS, ResultsUnwritable, storage_errors  # noqa: F401 (re-exported)
from masgrid._private.platform.results.table_schemas import AGENTS_SCHEMA, EVENTS_SCHEMA, PARTITION_KEYS, runs_schema

TABLES = ("runs", "agents", "events")
#: Parquet codec: zstd stores an event in about two thirds of snappy's bytes (the default)
#: for the same CPU (benchmarks/bench_recorder.py); pyarrow, pandas, DuckDB and Spark read it
COMPRESSION = "zstd"
#: what a resume reads of each recorded run
OUTCOME_SCHEMA = pa.schema([("run_id", pa.string()), ("status", pa.string()), ("error_class", pa.string())])

log = logging.getLogger(__name__)


def _without_partitions(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in PARTITION_KEYS])


SCHEMAS = {
    "runs": _without_partitions(runs_schema()),
    "agents": _without_partitions(AGENTS_SCHEMA),
    "events": _without_partitions(EVENTS_SCHEMA),
}


def partition_dir(root: Path, table: str, partition: dict[str, Any]) -> Path:
    path = root / table
    for key in PARTITION_KEYS:
        path = path / f"{key}={quote(str(partition[key]), safe='')}"
    return path


def write_table_atomic(path: Path, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    with storage_errors(path.parent):
        _write_table_atomic(path, rows, schema)


def _write_table_atomic(path: Path, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = to_table(rows, schema)  # model text made storable; a bad value is nulled and noted
    tmp = path.parent / f".tmp-{uuid.uuid4().hex}.parquet"
    try:
        pq.write_table(table, tmp, compression=COMPRESSION)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            try:
                tmp.unlink()
            except OSError:
                pass  # a read-only disk: the dot-file is ignored by readers anyway


class OrphanedRun(RuntimeError):
    """A write from a run whose submitting command died and whose results_dir has a new owner."""


class Recorder:
    """Writes one experiment's tables. One instance per results_dir (a Ray actor in runs)."""

    def __init__(self, results_dir: str | os.PathLike[str]) -> None:
        self.root = Path(results_dir).resolve()
        for table in TABLES:
            with storage_errors(self.root):
                (self.root / table).mkdir(parents=True, exist_ok=True)
        heap.settle()

    def ready(self) -> str:
        return str(self.root)

    def claim(self, owner: str) -> None:
        """Make `owner` (the Ray job id of the command now holding the results_dir's writer
        lock) the only one whose warm drivers may write here: a warm recorder outlives the
        command that started it, and so may the runs of a command that was killed."""
        self.owner = owner

    def write_as(self, owner: str, method: str, *args: Any) -> Any:
        """`method` (begin_run, write_events, finish_run) on behalf of a warm driver's run
        submitted by `owner`; refused once another command claimed this results_dir, so a
        killed command's run still in flight can never write next to its re-run."""
        current = getattr(self, "owner", None)
        if current is not None and owner != current:
            raise OrphanedRun(f"results_dir {self.root} now belongs to job {current}; this run was submitted by "
                              f"job {owner}, which is gone: its writes are refused")
        if method not in ("begin_run", "write_events", "finish_run"):
            raise ValueError(f"write_as: {method} is not a write")
        return getattr(self, method)(*args)

    def _files_of(self, table: str, run_id: str, partition: dict[str, Any]) -> Iterable[Path]:
        return partition_dir(self.root, table, partition).glob(f"part-{run_id}*.parquet")

    def begin_run(self, run_id: str, partition: dict[str, Any]) -> None:
        """Drop files a previous, interrupted attempt at the same run left behind (runs row last)."""
        for table in ("runs", "agents", "events"):
            for path in self._files_of(table, run_id, partition):
                with storage_errors(path.parent):
                    path.unlink(missing_ok=True)

    def write_events(self, run_id: str, partition: dict[str, Any], chunk: int, rows: list[dict[str, Any]]) -> None:
        if rows:
            path = partition_dir(self.root, "events", partition) / f"part-{run_id}-{chunk:05d}.parquet"
            write_table_atomic(path, rows, SCHEMAS["events"])

    def finish_run(self, run_row: dict[str, Any], agent_rows: list[dict[str, Any]], partition: dict[str, Any]) -> None:
        run_id = run_row["run_id"]
        if agent_rows:
            write_table_atomic(partition_dir(self.root, "agents", partition) / f"part-{run_id}.parquet",
                               agent_rows, SCHEMAS["agents"])
        write_table_atomic(partition_dir(self.root, "runs", partition) / f"part-{run_id}.parquet",
                           [run_row], SCHEMAS["runs"])

    def recorded_run(self, run_id: str, partition: dict[str, Any]) -> dict[str, Any] | None:
        """The run's runs row as written (partition columns aside), or None: not written, or
        unreadable. A sweep asks when a driver died, to tell a run that ended from one cut short."""
        path = partition_dir(self.root, "runs", partition) / f"part-{run_id}.parquet"
        try:
            rows = pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError):  # absent or damaged: the run counts as not recorded
            return None
        return rows[0] if len(rows) == 1 else None

    def run_status(self) -> dict[str, str]:
        """run_id -> status of every recorded run."""
        return {run_id: status for run_id, (status, _) in self.run_outcomes().items()}

    def run_outcomes(self) -> dict[str, tuple[str, str | None]]:
        """run_id -> (status, error_class) of every recorded run (for resume). Damaged files are
        set aside first (analysis/integrity.py), so their runs count as incomplete and run again.
        Rows written before `error_class` existed read as null."""
        from masgrid._private.analysis.integrity import check_results, describe

        for line in describe(check_results(self.root)):
            log.warning("masgrid: %s", line)
        import pyarrow.dataset as ds  # here: it imports pandas, which nothing else of a run needs

        files = sorted((self.root / "runs").rglob("part-*.parquet"))
        if not files:
            return {}
        try:  # one scan, two columns (helper columns absent from older files read as null)
            table = ds.dataset([str(p) for p in files], format="parquet", schema=OUTCOME_SCHEMA).to_table()
        except (pa.ArrowException, OSError):  # a file whose footer reads but whose data does not
            table = self._outcomes_file_by_file(files)
        return {r: (s, c) for r, s, c in zip(table["run_id"].to_pylist(), table["status"].to_pylist(),
                                              table["error_class"].to_pylist())}

    def _outcomes_file_by_file(self, files: list[Path]) -> pa.Table:
        import pyarrow.dataset as ds

        from masgrid._private.analysis.integrity import Damage, describe, quarantine

        parts, bad = [], []
        for path in files:
            try:
                parts.append(ds.dataset(str(path), format="parquet", schema=OUTCOME_SCHEMA).to_table())
            except (pa.ArrowException, OSError) as exc:
                bad.append(Damage(path=str(path), table="runs", run_id=path.stem.removeprefix("part-"),
                                  error=f"{type(exc).__name__}: {exc}"[:200],
                                  lost=f"the runs row of run {path.stem.removeprefix('part-')}: it runs again"))
        for line in describe(quarantine(self.root, bad)):
            log.warning("masgrid: %s", line)
        return pa.concat_tables(parts) if parts else OUTCOME_SCHEMA.empty_table()
