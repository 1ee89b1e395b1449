"""The report's adaptive-sweep section and the stopping-rule note under every table.

Present only when `results_dir/cells/` holds a cells table (an adaptive sweep, docs/adaptive.md).
A cell's number of runs depends on its outcomes there, so a plain interval over its runs is
not exact: every table of such a report says which rule chose the runs and that its
intervals are approximate.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from masgrid._private.analysis.markdown import write_table
from masgrid._private.analysis.cells import read_cells

#: the warning every table of a report over an adaptive sweep carries
APPROXIMATE = ("intervals over these runs were computed after optional stopping and are approximate "
               "(coverage can fall below the nominal level)")


def stopping_note(cells: pd.DataFrame) -> str:
    """One line: the stopping rule(s) of the adaptive sweep(s) behind the runs, and the warning."""
    rules = list(dict.fromkeys(cells["rule"].astype(str)))
    return (f"Stopping rule: {len(cells)} grid cells were sampled adaptively ({'; '.join(rules)}; "
            f"per cell: adaptive.md); {APPROXIMATE}.")


def cells_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per cell: runs, estimate, interval and why sampling stopped."""
    table = cells.sort_values(["sweep_id", "cell"]).rename(columns={"n_seeds": "seeds", "n_runs": "usable runs",
                                                                     "n_failed": "failed"})
    columns = ["cell", "metric", "seeds", "usable runs", "failed", "estimate", "ci_low", "ci_high", "reason"]
    if table["pair_key"].notna().any():
        columns[-1:-1] = ["wins", "losses"]
    return table[columns].reset_index(drop=True)


def annotate_tables(folder: Path, note: str) -> None:
    """Put `note` on the line under every Markdown table of the report's .md files (once)."""
    for path in sorted(folder.rglob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        out: list[str] = []
        for i, line in enumerate(lines):
            out.append(line)
            in_table = line.startswith("|")
            ends = i + 1 == len(lines) or not lines[i + 1].startswith("|")
            if in_table and ends:
                following = next((x for x in lines[i + 1:] if x.strip()), "")
                if following != note:
                    out += ["", note]
        path.write_text("\n".join(out) + "\n", encoding="utf-8")


def adaptive_section(results_dir: Path, out: Path) -> list[str]:
    """Write adaptive.md/.csv, note the rule under every table under `out`; index lines (none
    without an adaptive sweep)."""
    cells = read_cells(results_dir)
    if cells.empty:
        return []
    note = stopping_note(cells)
    reasons = cells["reason"].value_counts().sort_index()
    intro = (f"{len(cells)} cells, {int(cells['n_seeds'].sum())} runs; stopped: "
             + ", ".join(f"{n} {reason}" for reason, n in reasons.items()) + ".")
    write_table(cells_table(cells), out, "adaptive", "Adaptive sweep: why each cell stopped", intro)
    annotate_tables(out, note)
    return ["## Adaptive sweep", "", intro, "", note, "", "[Per cell: runs, estimate, interval, reason](adaptive.md)",
            ""]
