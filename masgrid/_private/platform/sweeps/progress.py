"""Sweep progress: a live rich bar on a terminal, plain timestamped lines in job logs.

`ray job submit` and CI capture stdout without a terminal, where a live bar would either
vanish or spam carriage returns; there the same counts (done, failed, ETA) are printed as
one line per `log_every_s` and at the end.
"""

from __future__ import annotations

import sys
import time
from typing import Literal
from collections.abc import Callable

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)


class SweepProgress:
    def __init__(self, total: int, mode: Literal["auto", "rich", "plain", "off"] = "auto",
                 log_every_s: float = 10.0, console: Console | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.console = console or Console(file=sys.stdout)
        if mode == "auto":
            mode = "rich" if self.console.is_terminal else "plain"
        self.mode = mode
        self.total = total
        self.done = 0
        self.failed = 0
        self.degraded = 0
        self.invalid = 0
        self.log_every_s = log_every_s
        self._t0 = self.clock()
        self._first: float | None = None  # when the first run completed
        self._last_line = float("-inf")  # the first completion always prints
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def note(self, text: str, err: bool = False) -> None:
        if self.mode == "off":
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr if err else sys.stdout, flush=True)

    def start(self) -> None:
        self._t0 = self.clock()
        if self.mode == "rich":
            self._bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("[yellow]{task.fields[degraded]} degraded"),
                                 TextColumn("[red]{task.fields[invalid]} invalid {task.fields[failed]} failed"),
                                 TimeElapsedColumn(),
                                 TextColumn("eta"), TimeRemainingColumn(), console=self.console)
            self._bar.start()
            self._task = self._bar.add_task("sweep", total=self.total, failed=0, degraded=0, invalid=0)

    def advance(self, failed: bool = False, status: str | None = None) -> None:
        """One run finished; `status` (ok, degraded, invalid, failed) is counted as such."""
        status = status or ("failed" if failed else "ok")
        if self._first is None:
            self._first = self.clock()
        self.done += 1
        self.failed += status == "failed"
        self.degraded += status == "degraded"
        self.invalid += status == "invalid"
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, failed=self.failed, degraded=self.degraded, invalid=self.invalid)
        elif self.mode == "plain":
            now = self.clock()
            if self.done == self.total or now - self._last_line >= self.log_every_s:
                self._last_line = now
                print(self.line(), flush=True)

    def line(self) -> str:
        """Counts, rate and ETA. Rate and ETA are measured from the first completion: until then
        the clock holds Ray's and the first actors' start-up, which later runs do not pay
        (a warm pool), so an ETA from it would be far too long. Unknown ("?") before two."""
        now = self.clock()
        elapsed = now - self._t0
        rate = eta = float("nan")
        if self.done >= 2 and self._first is not None and now > self._first:
            per_run = (now - self._first) / (self.done - 1)
            rate, eta = 60 / per_run, per_run * (self.total - self.done)
        elif self.done and self.done == self.total:
            eta = 0.0
        return (f"[sweep] {self.done}/{self.total} done, {self.degraded} degraded, {self.invalid} invalid, "
                f"{self.failed} failed, "
                f"{'?' if rate != rate else f'{rate:.1f}'} runs/min, elapsed {_hms(elapsed)}, eta {_hms(eta)}")

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _hms(seconds: float) -> str:
    if seconds != seconds:  # nan
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
