"""DataFrame -> Markdown / CSV with flat column names (no tabulate dependency)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def flatten(df: pd.DataFrame) -> pd.DataFrame:
    """Index becomes columns; MultiIndex column labels are joined with ' / '."""
    out = df.copy()
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = [" / ".join(str(p) for p in col) for col in out.columns]
    else:
        out.columns = [str(c) for c in out.columns]
    has_index = not (out.index.name is None and out.index.names == [None]
                     and isinstance(out.index, pd.RangeIndex))
    return out.reset_index() if has_index else out


def _cell(value: object, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if column.split(" / ")[-1] in ("p", "p_vs_base") else f"{value:.2f}"
    return str(value)


def to_markdown(df: pd.DataFrame) -> str:
    flat = flatten(df)
    if flat.empty:
        return "(no data)\n"
    header = "| " + " | ".join(flat.columns) + " |"
    rule = "|" + "|".join("---" for _ in flat.columns) + "|"
    lines = [header, rule]
    for row in flat.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, c) for v, c in zip(row, flat.columns)) + " |")
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, folder: Path, name: str, title: str, note: str | None = None) -> list[Path]:
    """`name.md` (title, note, table) and `name.csv` under folder."""
    folder.mkdir(parents=True, exist_ok=True)
    md, csv = folder / f"{name}.md", folder / f"{name}.csv"
    md.write_text(f"# {title}\n\n{note + chr(10) * 2 if note else ''}{to_markdown(df)}", encoding="utf-8")
    flatten(df).to_csv(csv, index=False)
    return [md, csv]
