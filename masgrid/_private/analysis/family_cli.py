"""The command line shared by the per-family reports (`python -m masgrid._private.analysis.X_report RESULTS_DIR OUT_DIR`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from collections.abc import Callable

Writer = Callable[[str, str], list[Path]]


def report_main(prog: str, description: str, write: Writer, argv: list[str] | None = None) -> int:
    """Parse RESULTS_DIR OUT_DIR, write the report, print its files; a ValueError (e.g. no runs of
    the family) is one line `prog: message` and exit status 1."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("results_dir")
    parser.add_argument("out_dir")
    ns = parser.parse_args(argv)
    try:
        paths = write(ns.results_dir, ns.out_dir)
    except ValueError as exc:
        print(f"{prog}: {exc}")
        return 1
    for path in paths:
        print(path)
    return 0
