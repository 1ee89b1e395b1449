"""Damaged result files: found, reported, set aside, and their runs redone.

A results directory can be damaged outside masgrid's control (a disk filling up under
another program, a copy interrupted half-way, a file edited by hand). masgrid's own writes
are atomic, so any `part-*.parquet` that pyarrow cannot read was damaged after it was
written. Such a file must neither block a resume nor `masgrid report`:

- it is moved to `results_dir/quarantine/<same relative path>` and logged, with what was
  lost, in `results_dir/quarantine/log.jsonl`; the log is the lasting record (`read_log`), so
  a report lists every file set aside, including those a resume moved before it ran;
- a run whose `agents` or `events` file is damaged has its `runs` file set aside as well,
  so it counts as incomplete and a resume runs it again (a run is complete exactly when it
  has a `runs` row); a damaged `runs` file makes its run incomplete by itself.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, UTC
from pathlib import Path

import pyarrow.parquet as pq
from pydantic import BaseModel

TABLES = ("runs", "agents", "events")
QUARANTINE = "quarantine"
LOG = "log.jsonl"
_RUN_ID = re.compile(r"^part-([0-9a-f]{16})(?:-\d+)?\.parquet$")
#: `Damage.error` of a readable runs file moved because its run's other files were damaged
SET_ASIDE = "set aside"
log = logging.getLogger(__name__)


class Damage(BaseModel):
    """One unreadable file and what its loss means."""

    path: str
    table: str
    run_id: str | None
    error: str
    lost: str
    moved_to: str | None = None
    #: when it was moved (UTC, ISO 8601)
    time: str | None = None


def _readable(path: Path, deep: bool = False) -> str | None:
    """None if the file's footer and schema read back (with `deep`, its data too), else why
    not (a truncated or foreign file). Damage inside the data pages surfaces only when the
    data are read: the readers then scan deep (Recorder.run_outcomes, analysis.load.read_table)."""
    try:
        meta = pq.ParquetFile(path).metadata
        if meta.num_columns == 0:
            return "no columns"
        if deep:
            pq.read_table(path)
        return None
    except Exception as exc:  # noqa: BLE001 - any reader failure means the file is damaged
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def scan(results_dir: str | Path, deep: bool = False, tables: tuple[str, ...] = TABLES) -> list[Damage]:
    """Every unreadable data file under `tables` (temporary dot-files are ignored); `deep`
    reads every file whole, which only a reader that just failed should pay for."""
    root = Path(results_dir)
    found = []
    for table in tables:
        base = root / table
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("part-*.parquet")):
            why = _readable(path, deep)
            if why is None:
                continue
            match = _RUN_ID.match(path.name)
            run_id = match.group(1) if match else None
            lost = (f"the runs row of run {run_id}: the run will be re-run on resume" if table == "runs" else
                    f"{table} rows of run {run_id}: its runs row is set aside too, so a resume re-runs it")
            found.append(Damage(path=str(path), table=table, run_id=run_id, error=why, lost=lost))
    return found


def quarantine(results_dir: str | Path, damages: list[Damage]) -> list[Damage]:
    """Move damaged files (and the runs files of runs they belong to) out of the tables."""
    root = Path(results_dir)
    moved: list[Damage] = []
    extra: list[Damage] = []
    for damage in damages:
        if damage.table != "runs" and damage.run_id:
            for runs_file in (root / "runs").rglob(f"part-{damage.run_id}.parquet"):
                extra.append(Damage(path=str(runs_file), table="runs", run_id=damage.run_id, error=SET_ASIDE,
                                    lost=f"run {damage.run_id} is incomplete until a resume re-runs it "
                                         f"({damage.table} file damaged)"))
    log_path = root / QUARANTINE / LOG
    for damage in [*damages, *extra]:
        path = Path(damage.path)
        if not path.exists():
            continue
        target = root / QUARANTINE / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target = target.with_name(f"{target.stem}.{datetime.now(UTC):%Y%m%dT%H%M%S%f}{target.suffix}")
        path.replace(target)
        done = damage.model_copy(update={"moved_to": str(target), "time": datetime.now(UTC).isoformat()})
        moved.append(done)
        with log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(done.model_dump()) + "\n")
    return moved


def read_log(results_dir: str | Path) -> list[Damage]:
    """Every file ever set aside under results_dir, oldest first, from the quarantine log:
    whoever moved it (a resume, a report), a report must still say what is missing and why.
    A line that does not parse is skipped with a warning rather than hiding the others."""
    path = Path(results_dir) / QUARANTINE / LOG
    if not path.is_file():
        return []
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(Damage.model_validate_json(line))
        except ValueError as exc:
            log.warning("%s line %d is not a quarantine entry (%s); skipped", path, number,
                        str(exc).splitlines()[0])
    return entries


def check_results(results_dir: str | Path, move: bool = True, deep: bool = False,
                  tables: tuple[str, ...] = TABLES) -> list[Damage]:
    """Scan and (by default) quarantine; returns what was found, for the caller to report."""
    damages = scan(results_dir, deep, tables)
    return quarantine(results_dir, damages) if damages and move else damages


def describe(damages: list[Damage]) -> list[str]:
    """One line per damaged file, for a terminal or a log."""
    return [(f"set aside {d.table} file {d.path}" if d.error == SET_ASIDE
             else f"damaged {d.table} file {d.path} ({d.error})")
            + f"; lost: {d.lost}" + (f"; moved to {d.moved_to}" if d.moved_to else "") for d in damages]
