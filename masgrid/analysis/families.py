"""Which benchmark families a results directory holds, and each family's own report.

A family is recognised by its task names (docs/results.md): MAS-Bench `sorting`, `max`,
`prefix_sum`; SILO-Bench `silo/<level>-<nn>`; AgentsNet `agentsnet/*`; SIMAS `simas/*`;
CooperBench `cooper/<pool>/<id>`. Each
family's tables are computed from its own runs only: metrics of different families do not
mean the same thing and are never pooled.
"""

from __future__ import annotations

import time

from pathlib import Path
from typing import Callable

import pandas as pd

from masgrid.analysis.silo_common import level_of

MASBENCH_TASKS = ("sorting", "max", "prefix_sum")

#: family -> (label, predicate on a task name); the order is the report's
FAMILIES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "masbench": ("MAS-Bench", lambda task: task in MASBENCH_TASKS),
    "silo": ("SILO-Bench", lambda task: level_of(task) is not None),
    "agentsnet": ("AgentsNet", lambda task: task.startswith("agentsnet/")),
    "simas": ("SIMAS", lambda task: task.startswith("simas/")),
    "cooper": ("CooperBench", lambda task: task.startswith("cooper/")),
}


def family_of(task: str) -> str | None:
    """The family key of one task name, None for a task no family claims."""
    for key, (_, claims) in FAMILIES.items():
        if claims(str(task)):
            return key
    return None


def families_present(runs: pd.DataFrame) -> list[str]:
    """Family keys with at least one recorded run, in FAMILIES order."""
    if runs.empty:
        return []
    found = set(runs["task"].astype(str).map(family_of).dropna())
    return [key for key in FAMILIES if key in found]


def write_family_reports(results_dir: Path, out: Path, families: list[str],
                         written: list[Path] | None = None) -> dict[str, tuple[Path | None, str]]:
    """Each non-MAS-Bench family's report in out/<family>/: family -> (index file or None,
    one line saying what was written or why not). The family reports read the results
    directory themselves and keep to their own runs. Every file written (tables, CSVs,
    figures, not only the index) is appended to `written` when given."""
    from masgrid.analysis import agentsnet, cooper_report, silo_report, simas_report

    def agentsnet_files(d: Path) -> list[Path]:
        start = time.time()
        index = agentsnet.write_report(results_dir, d)  # returns its index only: list what it wrote now
        fresh = sorted(p for p in d.rglob("*") if p.is_file() and p != index and p.stat().st_mtime >= start - 1.0)
        return [index, *fresh]

    def index_first(files: list[Path]) -> list[Path]:
        index = next((p for p in files if p.name == "README.md"), files[0])
        return [index, *(p for p in files if p != index)]

    writers: dict[str, Callable[[Path], list[Path]]] = {
        "silo": lambda d: silo_report.write_report(results_dir, d),
        "agentsnet": agentsnet_files,
        "simas": lambda d: simas_report.write_report(results_dir, d),
        "cooper": lambda d: index_first(cooper_report.write_report(results_dir, d)),
    }
    done: dict[str, tuple[Path | None, str]] = {}
    for family in families:
        label = FAMILIES[family][0]
        if family == "masbench":
            continue  # written by analysis/report.py at the top of the report folder
        if family not in writers:
            done[family] = (None, f"{label}: runs recorded; its tables are not part of this report yet")
            continue
        try:
            files = writers[family](out / family)
        except ValueError as exc:  # e.g. no usable runs of the family: say so, keep the others
            done[family] = (None, f"{label}: no tables ({exc})")
            continue
        index = files[0]
        if written is not None:
            written.extend(files)
        done[family] = (index, f"{label}: [{index.relative_to(out)}]({index.relative_to(out)})")
    return done
