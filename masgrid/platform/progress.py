"""Sweep progress: a live rich bar on a terminal, plain timestamped lines in job logs.

`ray job submit` and CI capture stdout without a terminal, where a live bar would either
vanish or spam carriage returns; there the same counts (done, failed, ETA) are printed as
one line per `log_every_s` and at the end.
"""

from __future__ import annotations

import sys
import time
from typing import Literal

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)


class SweepProgress:
    def __init__(self, total: int, mode: Literal["auto", "rich", "plain", "off"] = "auto",
                 log_every_s: float = 10.0, console: Console | None = None) -> None:
        self.console = console or Console(file=sys.stdout)
        if mode == "auto":
            mode = "rich" if self.console.is_terminal else "plain"
        self.mode = mode
        self.total = total
        self.done = 0
        self.failed = 0
        self.log_every_s = log_every_s
        self._t0 = time.monotonic()
        self._last_line = float("-inf")  # the first completion always prints
        self._bar: Progress | None = None
        self._task: int | None = None

    def note(self, text: str, err: bool = False) -> None:
        if self.mode == "off":
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr if err else sys.stdout, flush=True)

    def start(self) -> None:
        self._t0 = time.monotonic()
        if self.mode == "rich":
            self._bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("[red]{task.fields[failed]} failed"), TimeElapsedColumn(),
                                 TextColumn("eta"), TimeRemainingColumn(), console=self.console)
            self._bar.start()
            self._task = self._bar.add_task("sweep", total=self.total, failed=0)

    def advance(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
        elif self.mode == "plain":
            now = time.monotonic()
            if self.done == self.total or now - self._last_line >= self.log_every_s:
                self._last_line = now
                print(self.line(), flush=True)

    def line(self) -> str:
        elapsed = time.monotonic() - self._t0
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        rate = self.done / elapsed * 60 if elapsed > 0 else 0.0
        return (f"[sweep] {self.done}/{self.total} done, {self.failed} failed, "
                f"{rate:.1f} runs/min, elapsed {_hms(elapsed)}, eta {_hms(eta)}")

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _hms(seconds: float) -> str:
    if seconds != seconds:  # nan
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
