"""Which benchmark families a results directory holds, and each family's own report.

A run belongs to the family that claims its task name (masgrid/family.py). Each family's
tables are computed from its own runs only: metrics of different families do not mean the
same thing and are never pooled.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from masgrid.family import Family, families, family_of, resolve

logger = logging.getLogger(__name__)


def family_name(task: str) -> str | None:
    """The family key of one task name, None for a task no family claims."""
    family = family_of(str(task))
    return None if family is None else family.name


def families_present(runs: pd.DataFrame) -> list[str]:
    """Family keys with at least one recorded run, in family order."""
    if runs.empty:
        return []
    found = set(runs["task"].astype(str).map(family_name).dropna())
    return [key for key in families() if key in found]


def _call_report(family: Family, results_dir: Path, out: Path, **options: Any) -> list[Path]:
    """The family's report writer, given the report options its signature takes."""
    assert family.report is not None
    writer = resolve(family.report)
    accepted = inspect.signature(writer).parameters
    return list(writer(results_dir, out, **{k: v for k, v in options.items() if k in accepted}))


def write_family_reports(results_dir: Path, out: Path, present: list[str], written: list[Path] | None = None,
                         **options: Any) -> dict[str, tuple[Path | None, str]]:
    """Each family's report in out/<family>/: family -> (index file or None, one line saying
    what was written or why not). `options` (with_invalid, condition) reach the writers that
    take them. Every file written is appended to `written` when given."""
    done: dict[str, tuple[Path | None, str]] = {}
    registry = families()
    for key in present:
        family = registry[key]
        if family.report is None:
            done[key] = (None, f"{family.label}: runs recorded; the family writes no report")
            continue
        try:
            files = _call_report(family, results_dir, out / key, **options)
        except ValueError as exc:  # e.g. no usable runs of the family: say so, keep the others
            done[key] = (None, f"{family.label}: no tables ({exc})")
            continue
        if not files:
            done[key] = (None, f"{family.label}: no tables written")
            continue
        index = files[0]
        if written is not None:
            written.extend(files)
        done[key] = (index, f"{family.label}: [{index.relative_to(out)}]({index.relative_to(out)})")
    return done
