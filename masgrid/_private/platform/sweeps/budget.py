"""Sweep budgets (`sweep.budget`, docs/hosted-apis.md "Budgets"): start no run whose projected
spend would take the sweep past its budget, and say what was left out.

The launcher asks a `SweepBudget` before it starts each run (`ray_runs.run_many`'s `gate`): the
run starts only when what the sweep's runs have spent (earlier invocations' included, so a
resume counts them), the projected spend of the runs in flight and its own projection stay
within every budget given. Runs in flight always finish. A run that does not fit waits while
others are in flight (they may spend less than projected); once none is, the runs left are set
aside with no runs row, so a resume with a larger budget runs them. What a run spends and how
it is projected: platform/sweeps/spend.py.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.spend import Key, Ledger, Spend, read_row, unpriced, zero

log = logging.getLogger(__name__)


class BudgetSettings(BaseModel):
    """`sweep.budget`: caps on what the whole sweep spends; never part of any run's identity."""

    model_config = ConfigDict(extra="forbid")

    tokens: int | None = Field(None, gt=0, description="tokens in + out over the sweep's runs, less those answered "
                                                       "from the response cache; null: no cap in tokens")
    usd: float | None = Field(None, gt=0, description="US dollars at each model preset's `price` (a preset without "
                                                      "one is refused); null: no cap in money")

    @property
    def active(self) -> bool:
        return self.tokens is not None or self.usd is not None

    def limits(self) -> list[tuple[str, float]]:
        return [(unit, float(limit)) for unit, limit in (("tokens", self.tokens), ("usd", self.usd))
                if limit is not None]


def check_budget(cfgs: Sequence[RunConfig], settings: BudgetSettings) -> str | None:
    """One line refusing a budget the runs cannot be held to (before anything starts), else None."""
    if settings.usd is None:
        return None
    why = unpriced(cfgs)
    return f"masgrid run: {why}" if why else None


def amount(unit: str, value: float | None, named: bool = True) -> str:
    if value is None:
        return "unknown"
    if unit == "tokens":
        return f"{value:,.0f}" + (" tokens" if named else "")
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.3g}"


def against(spent: Spend, settings: BudgetSettings) -> str:
    """`1,200 of 1,500 tokens and $0.12 of $5.00`."""
    return " and ".join(f"{amount(u, _value(spent, u), named=False)} of {amount(u, limit)}"
                        for u, limit in settings.limits())


def _value(spend: Spend, unit: str) -> float | None:
    return spend.tokens if unit == "tokens" else spend.usd


class SweepBudget:
    """The budget of one sweep: the launcher's gate (may_start, started, ended, finished,
    set_aside) and the line that says what it did."""

    def __init__(self, settings: BudgetSettings) -> None:
        self.settings = settings
        self.ledger = Ledger(priced=settings.usd is not None)
        self.in_flight: dict[Key, RunConfig] = {}
        self.not_started: list[RunConfig] = []
        #: the first run set aside: its projection and where it came from
        self.refused: tuple[Spend | None, str] | None = None
        #: spent + the projections of the runs in flight, until a run starts, ends or is counted
        self._committed: Spend | None = None

    def include(self, cfgs: Sequence[RunConfig]) -> None:
        """These runs are the sweep's: count what their results_dirs record of them."""
        self.ledger.include(cfgs)
        self._committed = None

    def may_start(self, cfg: RunConfig) -> bool:
        own, _ = self.ledger.projection(cfg)
        return not self._over(own)

    def _over(self, own: Spend | None) -> list[str]:
        """The units whose budget spent + in flight + `own` would pass (None: unknown, must leave room)."""
        if self._committed is None:  # the launcher asks once per queued run: summed once per change
            self._committed = self.ledger.spent
            for running in self.in_flight.values():
                projected, _ = self.ledger.projection(running)
                if projected is not None:
                    self._committed = self._committed + projected
        total = self._committed
        if own is not None:
            total = total + own
        over = []
        for unit, limit in self.settings.limits():
            value = _value(total, unit)
            if value is None or (value > limit if own is not None else value >= limit):
                over.append(unit)
        return over

    def started(self, cfg: RunConfig) -> None:
        self.in_flight[self.ledger.key(cfg)] = cfg
        self._committed = None

    def ended(self, cfg: RunConfig) -> None:
        self.in_flight.pop(self.ledger.key(cfg), None)
        self._committed = None

    def finished(self, cfg: RunConfig, summary: Any) -> None:
        """The run's outcome is final: count what its runs row records."""
        self.ledger.record(cfg, read_row(cfg))
        self._committed = None

    def set_aside(self, cfgs: Sequence[RunConfig]) -> None:
        """Nothing is in flight and none of these fits: they are not started (a resume runs them)."""
        if cfgs and self.refused is None:
            self.refused = self.ledger.projection(cfgs[0])
        self.not_started += cfgs
        log.debug("budget: %d run(s) set aside", len(cfgs))

    def opening(self) -> str:
        """Where the budget stands as the sweep starts."""
        return (f"budget: the sweep's recorded runs spent {against(self.ledger.spent, self.settings)}; a run starts "
                "while its projected spend fits")

    def line(self) -> str:
        """What the budget did, in one line: spent against each cap, and what a resume needs."""
        spent = self.ledger.spent
        caps = against(spent, self.settings)
        notes = []
        if self.ledger.unknown:
            notes.append(f"{len(self.ledger.unknown)} run(s) recorded no token counts (their drivers died): "
                         "not counted")
        if spent.usd_bound:
            notes.append("the USD figure is an upper bound (team runs took tokens from the cache, not recorded per "
                         "member)")
        tail = "".join(f"; {n}" for n in notes)
        if not self.not_started:
            return f"budget: spent {caps}; every run of the sweep started{tail}"
        projected, source = self.refused or (None, "")
        over = self._over(projected) or [u for u, _ in self.settings.limits()]
        nxt = (f"the next run projects {' and '.join(amount(u, _value(projected, u)) for u in over)} ({source})"
               if projected is not None else "nothing is left of it")
        keys = " and ".join(f"sweep.budget.{u}" for u in over)
        left = self._left() if len(self.ledger.cells()) > 1 else ""
        return (f"budget: {len(self.not_started)} of {len(self.ledger.ours)} runs not started"
                f"{f' ({left})' if left else ''}: spent {caps}, {nxt}; run again with a larger {keys} to run them{tail}")

    def _left(self, shown: int = 4) -> str:
        """The runs not started, counted per cell: `agents=4: 3, agents=8: 5` (the first few cells)."""
        from masgrid._private.platform.sweeps.grid_cells import labels

        counts: dict[str, int] = {}
        for cfg in self.not_started:
            cell = self.ledger.cell(cfg)
            counts[cell] = counts.get(cell, 0) + 1
        names = labels(self.ledger.cells())
        parts = [f"{names[cell]}: {n}" for cell, n in list(counts.items())[:shown]]
        more = len(counts) - shown
        return ", ".join(parts) + (f", and {more} more cell{'s' if more > 1 else ''}" if more > 0 else "")


def cost_plan(cfgs: Sequence[RunConfig], todo: Sequence[RunConfig], settings: BudgetSettings) -> list[str]:
    """`--plan`: what the runs left will likely spend, cell by cell, from the recorded complete
    runs of the same cells in their results_dirs (the mean spend of one run); a cell with none
    is said to have an unknown cost rather than guessed from others."""
    from masgrid._private.platform.sweeps.grid_cells import labels as cell_labels

    priced = unpriced(cfgs) is None
    ledger = Ledger(priced=priced)
    ledger.include(cfgs)
    cells: dict[str, list[RunConfig]] = {}
    for cfg in todo:
        cells.setdefault(ledger.cell(cfg), []).append(cfg)
    labels = cell_labels({cell: runs[0] for cell, runs in cells.items()})
    units = ["tokens", "usd"] if priced else ["tokens"]
    money = "US dollars at each preset's price" if priced else "in tokens only: a model the runs use has no price"
    head = f"cost estimate of the runs to run (the mean spend of the recorded complete runs of each cell; {money}):"
    lines, total, unknown = [head], zero(priced), 0
    for cell, runs in cells.items():
        n, mean = ledger.cell_stats(runs[0])
        if mean is None:
            unknown += len(runs)
            lines.append(f"  {labels[cell]}: {_runs(len(runs))}: no recorded runs: cost unknown")
            continue
        cost = mean.scaled(len(runs))
        total = total + cost
        lines.append(f"  {labels[cell]}: {_runs(len(runs))} x {_both(mean, units)} = {_both(cost, units)} "
                     f"(mean of {n} recorded {_runs(n).split(' ', 1)[1]})")
    known = len(todo) - unknown
    lines.append(f"  total: {_both(total, units)} for {known} of {len(todo)} runs"
                 + (f"; {_runs(unknown)} of cost unknown, so the sweep costs more" if unknown else ""))
    if settings.active:
        lines.append(f"budget: the sweep's recorded runs spent {against(ledger.spent, settings)}")
    return lines


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"


def _both(spend: Spend, units: Sequence[str]) -> str:
    return " / ".join(amount(u, _value(spend, u)) for u in units)
