"""The model-phases table of sweeps over models (`results_dir/phases/`, docs/results.md
"phases"): one row per phase a sweep executed, with how long loading and releasing its
models took; written by the sweep (platform/sweeps/model_phases/phase_table.py), read here for reports."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa

logger = logging.getLogger(__name__)

PHASES_DIR = "phases"

PHASE_COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    "sweep_id": (pa.string(), "the sweep command that executed the phase (one file per command)"),
    "phase": (pa.int64(), "position in the sweep's plan, from 1; a re-plan after a lost engine continues the count"),
    "models": (pa.list_(pa.string()), "the models (presets) deployed during the phase"),
    "replicas_json": (pa.string(), "model -> engine replicas during the phase, as JSON"),
    "loaded": (pa.list_(pa.string()), "models deployed (or woken) when the phase started"),
    "kept": (pa.list_(pa.string()), "models already up from the phase before"),
    "released": (pa.list_(pa.string()), "models released (deleted or put to sleep) when the phase started"),
    "failed": (pa.list_(pa.string()), "models that did not load: their runs were held, not run"),
    "error": (pa.string(), "why a model did not load, or why the phase stopped; null when none"),
    "load_s": (pa.float64(), "seconds spent deploying or waking the phase's models"),
    "release_s": (pa.float64(), "seconds spent releasing the models the phase did not need"),
    "run_s": (pa.float64(), "seconds from the phase's first run starting to its last ending; null while the phase "
                            "runs, and for good when the command was killed during it"),
    "runs": (pa.int64(), "runs the phase was planned to serve"),
    "runs_held": (pa.int64(), "of those, runs not started because a model they need did not load"),
    "cluster": (pa.string(), "the cluster capacity the plan was made for, in words"),
    "started_at": (pa.timestamp("us", tz="UTC"), "when the phase began releasing and loading"),
    "ended_at": (pa.timestamp("us", tz="UTC"), "when its last run ended; null: the phase did not end (still "
                                                "running, or the command was killed)"),
    "results_dir": (pa.string(), "where the phase's runs are recorded"),
}
PHASES_SCHEMA = pa.schema([(name, kind) for name, (kind, _) in PHASE_COLUMNS.items()])


def read_phases(results_dir: str | Path) -> Any:
    """Every phase row under results_dir (a DataFrame, empty when no sweep managed models)."""
    import pandas as pd
    import pyarrow.parquet as pq

    tables = []
    for path in sorted((Path(results_dir) / PHASES_DIR).glob("part-*.parquet")):
        try:
            tables.append(pq.read_table(path, schema=PHASES_SCHEMA))
        except (pa.ArrowException, OSError) as exc:
            logger.warning("phases table %s unreadable (%s); left out", path, exc)
    return pa.concat_tables(tables).to_pandas() if tables else pd.DataFrame(columns=list(PHASE_COLUMNS))


def loading_share(phases: Any) -> dict[str, float]:
    """Seconds loading, releasing and running, and the share of the sweeps' wall time spent
    loading and releasing models (from each phase's start to its end)."""
    if phases.empty:
        return {}
    ended = phases[phases["ended_at"].notna()]  # a phase a killed command left unfinished has no wall time
    wall = float((ended["ended_at"] - ended["started_at"]).dt.total_seconds().sum())
    phases = ended
    load = float(phases["load_s"].fillna(0).sum())
    release = float(phases["release_s"].fillna(0).sum())
    return {"phases": float(len(phases)), "wall_s": wall, "load_s": load, "release_s": release,
            "share_loading": (load + release) / wall if wall > 0 else float("nan")}


def phases_section(results_dir: Path, out: Path) -> list[str]:
    """phases.md/.csv and the report index's lines (none without a phased sweep)."""
    from masgrid._private.analysis.markdown import write_table

    phases = read_phases(results_dir)
    if phases.empty:
        return []
    share = loading_share(phases)
    table = phases[["sweep_id", "phase", "models", "loaded", "released", "failed", "load_s", "release_s", "run_s",
                    "runs", "runs_held"]].copy()
    for col in ("models", "loaded", "released", "failed"):
        table[col] = table[col].map(lambda v: ", ".join(v) if v is not None and len(v) else "")
    intro = (f"{int(share['phases'])} model phase(s); {share['load_s']:.0f} s loading and {share['release_s']:.0f} s "
             f"releasing models of {share['wall_s']:.0f} s in all: {100 * share['share_loading']:.1f} % of the "
             "sweeps' time went to swapping models.")
    held = int(phases["runs_held"].fillna(0).sum())
    if held:
        intro += f" {held} run(s) were held because a model did not load (see `failed` and `error`)."
    write_table(table, out, "phases", "Model phases: what each phase loaded and how long it took", intro)
    return ["## Model phases", "", intro, "", "[Per phase: models, load and release times](phases.md)", ""]
