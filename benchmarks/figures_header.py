"""What every figures file of these benchmarks starts with: when, where, and how loaded
the machine was (other sessions share it), and how the text is printed and saved."""

from __future__ import annotations

import os
import platform
from datetime import datetime, UTC
from pathlib import Path


def machine_line(load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    def load(values: tuple[float, ...]) -> str:
        return "/".join(f"{x:.1f}" for x in values)

    return (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; load average (1/5/15 min) before {load(load_before)}, "
            f"after {load(load_after)}")


def emit(lines: list[str], out: Path | None) -> None:
    """Print the figures, and write them to `out` when given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out is not None:
        out.write_text(text)
