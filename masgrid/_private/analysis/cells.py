"""The cells table of adaptive sweeps (`results_dir/cells/`, docs/results.md "cells"): its schema,
written by the sweep (platform/sweeps/adaptive.py), and its reader for analysis and reports."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa

logger = logging.getLogger(__name__)

#: folder of the cells table under results_dir (one file per adaptive sweep)
CELLS_DIR = "cells"


#: the cells table: one row per grid cell of an adaptive sweep (docs/results.md, "cells")
CELL_COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    "sweep_id": (pa.string(), "the adaptive sweep: hash of its rule and its cells (one file per sweep)"),
    "cell_key": (pa.string(), "the grid cell: hash of a run's identity without its seed"),
    "cell": (pa.string(), "the cell as the keys the grid varies, e.g. `agents=4 max_rounds=20`"),
    "pair_key": (pa.string(), "compare: the partner cell's cell_key; null for the width rule"),
    "compare_value": (pa.string(), "compare: this cell's value of the compared key"),
    "rule": (pa.string(), "the stopping rule in words (AdaptiveSettings.rule)"),
    "settings_json": (pa.string(), "sweep.adaptive as JSON"),
    "metric": (pa.string(), "the runs column the rule uses"),
    "seed_first": (pa.int64(), "first seed (sweep.adaptive.seed_start)"),
    "n_seeds": (pa.int64(), "seeds run: seed_first .. seed_first + n_seeds - 1"),
    "n_runs": (pa.int64(), "of those, runs usable (ok or degraded) with a value of the metric"),
    "n_failed": (pa.int64(), "runs failed, invalid or without a value of the metric"),
    "estimate": (pa.float64(), "mean of the metric over the usable runs (a proportion for yes/no)"),
    "ci_low": (pa.float64(), "interval at `confidence`: Wilson (yes/no) or Student t (numeric); approximate "
                             "after optional stopping"),
    "ci_high": (pa.float64(), "upper bound of the same interval"),
    "confidence": (pa.float64(), "level of ci_low/ci_high"),
    "wins": (pa.int64(), "compare: seeds where this cell succeeded and its partner failed"),
    "losses": (pa.int64(), "compare: seeds where its partner succeeded and this cell failed"),
    "reason": (pa.string(), "why sampling stopped: width_reached, separated, not_separated, max_seeds, failed_runs, "
                            "budget (sweep.budget left its next seeds unstarted: undecided, a resume with a larger "
                            "budget goes on), or in_progress (the sweep was stopped before the cell was decided)"),
    "run_ids": (pa.list_(pa.string()), "the cell's runs in seed order (join key to runs.run_id)"),
    "results_dir": (pa.string(), "where the runs are recorded"),
    "updated_at": (pa.timestamp("us", tz="UTC"), "when this row was written"),
}
CELLS_SCHEMA = pa.schema([(name, kind) for name, (kind, _) in CELL_COLUMNS.items()])



def read_cells(results_dir: str | Path) -> Any:
    """Every cells row under results_dir (a DataFrame, empty without an adaptive sweep)."""
    import pandas as pd
    import pyarrow.parquet as pq

    files = sorted((Path(results_dir) / CELLS_DIR).glob("part-*.parquet"))
    tables = []
    for path in files:
        try:
            tables.append(pq.read_table(path, schema=CELLS_SCHEMA))
        except (pa.ArrowException, OSError) as exc:
            logger.warning("cells table %s unreadable (%s); left out", path, exc)
    return pa.concat_tables(tables).to_pandas() if tables else pd.DataFrame(columns=list(CELL_COLUMNS))
