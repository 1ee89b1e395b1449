"""What the site shows about runs: the index row of every run and one run's page header
(configuration, provenance, metrics with units, the agents table)."""

from __future__ import annotations

import functools
import json
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from masgrid._private.analysis.families import family_name
from masgrid.family import families, family_columns
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.results.table_schemas import AGENT_COLUMNS, RUN_METRICS
from masgrid._private.site.jsdata import plain

#: one runs row as a plain dict (column -> value); far cheaper to read than a pandas Series
Run = dict[str, Any]

PROVENANCE = ("model", "model_preset", "backend", "temperature", "top_p", "max_tokens", "sampling_seed",
              "sampling_vs_paper", "token_counter", "token_counter_source", "tokenizer_sha256", "prompt_hash",
              "point_id", "masgrid_version", "git_commit", "python_version", "ray_version", "vllm_version",
              "tokenizers_version", "hostname", "started_at", "finished_at", "wall_s", "startup_s", "results_dir")
SETTING = ("task", "protocol", "agents", "k", "condition", "seed", "max_rounds", "experiment", "tags")


def setting_keys() -> tuple[str, ...]:
    """The run page's setting: the core keys with every family's top-level options after `k`."""
    return (*SETTING[:4], *family_columns(), *SETTING[4:])


def _get(run: Run, key: str) -> Any:
    return plain(run[key]) if key in run else None


def status_note(run: Run) -> str:
    """The status with why a run is not plainly ok (the page and the index show it)."""
    status = str(run.get("status"))
    if status in ("degraded", "invalid"):
        rate = _get(run, "model_error_rate")
        errors = _get(run, "model_errors")
        share = f"{rate:.1%}" if isinstance(rate, float) else "?"
        return f"{status}: {errors} failed model calls ({share})"
    if status == "failed":
        return f"failed ({_get(run, 'error_class') or 'unclassified'}): {_get(run, 'error') or ''}".strip()
    return status


class IndexRow(BaseModel):
    """One row of the runs index as site.js reads it (data/index.js): the boundary between the
    Parquet tables and the page, checked here so a type change fails the build, not the page."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    experiment: str | None
    tags: list[str] | None
    task: str
    protocol: str
    agents: int
    k: int | None
    model: str | None
    condition: str | None
    seed: int | None
    status: str
    sr: float | None
    success: bool | None
    rounds: int | None
    tokens_total: int | None
    wall_s: float | None
    model_error_rate: float | None
    family: str
    score: float | None
    score_name: str
    status_note: str


def index_row(run: Run) -> dict[str, Any]:
    """One row of the runs index (an IndexRow, as a dict)."""
    family = families().get(family_name(str(run["task"])) or "")
    # the index's "score" column: the family's own headline (Family.site_score), SR otherwise
    score_col, score_label = (family.site_score if family is not None and family.site_score else ("sr", "SR"))
    row = {key: _get(run, key) for key in ("run_id", "experiment", "tags", "task", "protocol", "agents", "k",
                                            "model", "condition", "seed", "status", "sr", "success", "rounds",
                                            "tokens_total", "wall_s", "model_error_rate")}
    row.update(family=family.label if family is not None else "other", score=_get(run, score_col), score_name=score_label,
               status_note=status_note(run))
    for key in ignored_keys(str(run["task"])):
        if key in row:
            row[key] = None  # the column keeps what was asked, but the task never read it
    return IndexRow.model_validate(row).model_dump()


@functools.cache
def ignored_keys(task: str) -> tuple[str, ...]:
    """Configuration keys the task never reads (docs/results.md): shown blank, not as a setting."""
    try:
        return get_task(task).ignored_keys
    except (KeyError, ValueError):
        return ()


def metrics(run: Run) -> list[dict[str, Any]]:
    """Every recorded (non-null) metric of the run with its unit and meaning."""
    out = []
    for name, metric in RUN_METRICS.items():
        value = _get(run, name)
        if value is not None:
            out.append({"name": name, "value": value, "unit": metric.unit, "meaning": metric.meaning})
    return out


def agents_table(agents: pd.DataFrame) -> dict[str, Any]:
    """The agents table of one run: columns (with units) and rows, system prompts left out
    (the transcript shows them)."""
    columns = [c for c in AGENT_COLUMNS if c in agents.columns and c not in
               ("run_id", "task", "protocol", "system_prompt", "experiment", "tags")]
    rows = [[plain(v) for v in row] for row in agents.sort_values("agent")[columns].itertuples(index=False)]
    units = {c: AGENT_COLUMNS[c].unit for c in columns}
    return {"columns": columns, "units": units, "rows": rows}


def run_header(run: Run, agents: pd.DataFrame) -> dict[str, Any]:
    """The run page's first screen: setting, status, provenance, metrics, agents, config."""
    config = json.loads(run["config_json"]) if isinstance(run.get("config_json"), str) else None
    setting = {k: _get(run, k) for k in setting_keys()}
    for key in ignored_keys(str(run["task"])):
        if setting.get(key) is not None:
            setting[key] = f"{setting[key]} (not read by this task)"
    return {"run_id": run["run_id"], "family": family_name(str(run["task"])), "status": _get(run, "status"),
            "status_note": status_note(run), "setting": setting,
            "provenance": {k: _get(run, k) for k in PROVENANCE}, "metrics": metrics(run),
            "agents": agents_table(agents), "config": config}
