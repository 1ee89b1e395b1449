"""The AgentsNet report as `masgrid report` writes it to report/agentsnet/ (analysis.py does the work)."""

from __future__ import annotations

import time
from pathlib import Path

from masgrid.families.agentsnet.analysis import write_report


def write_family_report(results_dir: str | Path, out: str | Path) -> list[Path]:
    """Every AgentsNet table and figure; the files written, index first."""
    start = time.time()
    out = Path(out)
    index = write_report(results_dir, out)  # returns its index only: list what it wrote now
    fresh = sorted(p for p in out.rglob("*") if p.is_file() and p != index and p.stat().st_mtime >= start - 1.0)
    return [index, *fresh]
