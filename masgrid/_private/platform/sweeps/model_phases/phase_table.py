"""Writing the phases table (schema and reader: analysis/model_phases.py, which never imports
the platform)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from masgrid._private.analysis.model_phases import PHASES_DIR, PHASES_SCHEMA


def write_phases(rows: list[dict[str, Any]], sweep_id: str, results_dirs: list[str]) -> None:
    """The sweep's phase rows to each results_dir/phases/part-<sweep_id>.parquet, atomically
    (rewritten as phases end, so an interrupted sweep keeps the phases it finished)."""
    import pyarrow.parquet as pq

    from masgrid._private.platform.results.storage import storage_errors

    for results_dir in results_dirs:
        folder = Path(results_dir) / PHASES_DIR
        with storage_errors(folder):
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".part-{sweep_id}.parquet.tmp"
            table = pa.Table.from_pylist([{**r, "results_dir": results_dir} for r in rows], schema=PHASES_SCHEMA)
            pq.write_table(table, tmp)
            os.replace(tmp, folder / f"part-{sweep_id}.parquet")
