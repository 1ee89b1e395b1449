"""Stopping rules of adaptive sweeps (`sweep.adaptive`, docs/adaptive.md): pure functions of the
recorded outcomes, so a test, a report or a resumed sweep can recompute every decision.

Two rules, each with an error rate that can be stated:

- interval width: the `confidence` interval of a cell's metric (Wilson for a yes/no column,
  Student t for a numeric one) is at most `width` wide;
- paired sequential test: two cells that differ only in one axis run the same seeds, so their
  outcomes pair up by seed. Among the seeds where exactly one of them succeeds (discordant
  pairs), "a wins" is Bernoulli(q), with q = 1/2 exactly when both have the same success
  probability (the sequential form of McNemar's test). Two one-sided Wald SPRTs, each at
  alpha/2, test q = 1/2 against q = psi/(1+psi) and q = 1/(1+psi) (`odds_ratio` psi).

Decisions are taken only at the looks (seed counts after each batch) of `looks()`: the
schedule depends on the settings alone, so a resumed or repeated sweep decides exactly as the
first did, whatever runs were already recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

#: why a cell stopped (cells table, column `reason`)
REASONS = ("width_reached", "separated", "not_separated", "max_seeds", "failed_runs", "in_progress")


def looks(min_seeds: int, batch: int, max_seeds: int) -> list[int]:
    """Seed counts at which a cell is evaluated: min_seeds, then every `batch` more, then max_seeds."""
    out = [min(min_seeds, max_seeds)]
    while out[-1] < max_seeds:
        out.append(min(out[-1] + batch, max_seeds))
    return out


def interval(values: Sequence[float], binary: bool, confidence: float) -> tuple[float, float, float]:
    """(estimate, low, high): Wilson score interval of a proportion, or the Student t interval of
    a mean. NaN bounds when there are too few values (none; one for a mean)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    if binary:
        from masgrid._private.analysis.dispersion import wilson

        k = int(sum(bool(v) for v in values))
        low, high = wilson(k, n, confidence)
        return k / n, low, high
    mean = float(sum(values)) / n
    if n < 2:
        return mean, math.nan, math.nan
    from scipy import stats

    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class PairedSprt:
    """Two-sided Wald SPRT on discordant pairs (see the module docstring)."""

    alpha: float = 0.05
    power: float = 0.8
    odds_ratio: float = 3.0

    @property
    def upper(self) -> float:
        """log A: a one-sided test rejects q = 1/2 at or above it."""
        return math.log(self.power / (self.alpha / 2))

    @property
    def lower(self) -> float:
        """log B: a one-sided test accepts q = 1/2 at or below it."""
        return math.log((1 - self.power) / (1 - self.alpha / 2))

    def llr(self, wins: int, losses: int) -> tuple[float, float]:
        """Log likelihood ratios of (a better, b better) against no difference."""
        q = self.odds_ratio / (1 + self.odds_ratio)
        up, down = math.log(2 * q), math.log(2 * (1 - q))
        return wins * up + losses * down, wins * down + losses * up

    def decide(self, counts: Sequence[tuple[int, int]]) -> tuple[str | None, int]:
        """Walk the looks' cumulative (wins, losses): ('separated' | 'not_separated' | None, index
        of the deciding look, or the last). A side that accepted no difference stays closed;
        the test separates as soon as an open side rejects, and accepts once both closed."""
        closed = [False, False]
        for i, (wins, losses) in enumerate(counts):
            for side, value in enumerate(self.llr(wins, losses)):
                if closed[side]:
                    continue
                if value >= self.upper:
                    return "separated", i
                if value <= self.lower:
                    closed[side] = True
            if all(closed):
                return "not_separated", i
        return None, len(counts) - 1


def width_decision(n_seeds: int, usable: Sequence[float], binary: bool, confidence: float, width: float,
                   min_seeds: int, max_seeds: int, failed: int, max_failed: int) -> str | None:
    """The width rule at one look: why the cell stops now, or None to go on."""
    if failed > max_failed:
        return "failed_runs"
    if n_seeds >= min_seeds and len(usable) >= 2:
        _, low, high = interval(usable, binary, confidence)
        if high - low <= width:
            return "width_reached"
    return "max_seeds" if n_seeds >= max_seeds else None


def discordant(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[int, int]:
    """(a succeeded where b failed, b succeeded where a failed) over seeds where both have a value."""
    pairs = [(bool(x), bool(y)) for x, y in zip(a, b) if x is not None and y is not None]
    return sum(x and not y for x, y in pairs), sum(y and not x for x, y in pairs)


class AdaptiveSettings(BaseModel):
    """`sweep.adaptive`: stopping rules. Inactive (a fixed sweep) unless `width` or `compare` is set."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field("success", description="runs-table column the rule looks at: a yes/no column "
                                               "(Wilson interval) or a numeric one (Student t interval)")
    confidence: float = Field(0.95, gt=0, lt=1, description="level of each cell's interval")
    width: float | None = Field(None, gt=0, description="stop a cell once its interval (high - low) is at most this wide")
    compare: str | None = Field(None, description="a swept key with exactly two values (e.g. condition): the cells that "
                                                  "differ only there form pairs, sampled on the same seeds until a "
                                                  "paired SPRT separates them or finds no difference")
    alpha: float = Field(0.05, gt=0, lt=0.5, description="compare: two-sided type I error of the SPRT")
    power: float = Field(0.8, gt=0.5, lt=1, description="compare: power (1 - beta) at the odds ratio")
    odds_ratio: float = Field(3.0, gt=1, description="compare: the alternative, how many times more often one "
                                                     "condition wins where the two disagree")
    min_seeds: int = Field(5, ge=2, description="seeds every cell runs before any rule is applied")
    batch: int = Field(5, ge=1, description="seeds added to an open cell per look")
    max_seeds: int = Field(50, ge=2, description="seeds per cell at most; a cell reaching it stops (reason max_seeds)")
    seed_start: int = Field(0, ge=-(2**63), lt=2**63 - 1_000_000, description="the first seed of every cell")
    max_failed: int = Field(5, ge=0, description="a cell stops (reason failed_runs) once more of its runs than "
                                                 "this failed or are invalid")

    @field_validator("compare")
    @classmethod
    def _one_rule(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("width") is not None:
            raise ValueError("set width (an interval target) or compare (a paired test), not both")
        return value

    @field_validator("max_seeds")
    @classmethod
    def _not_below_min(cls, value: int, info: ValidationInfo) -> int:
        if value < info.data.get("min_seeds", 0):
            raise ValueError(f"{value} is less than min_seeds {info.data['min_seeds']}")
        return value

    @model_validator(mode="after")
    def _rule_chosen(self) -> Self:
        if self.active:  # the metric's type is known to the runs schema (Arrow: only for adaptive sweeps)
            kind = metric_kind(self.metric)
            if kind is None:
                import difflib

                near = difflib.get_close_matches(self.metric, list(numeric_metrics()), n=3)
                raise ValueError(f"metric: {self.metric!r} is not a numeric or yes/no runs column (docs/results.md)"
                                 + (f"; did you mean {', '.join(near)}?" if near else "; e.g. success, sr, rounds"))
            if self.compare is not None and kind != "bool":
                raise ValueError(f"metric: a paired test (compare) needs a yes/no metric such as success, "
                                 f"not {self.metric}")
        else:
            changed = sorted(k for k in self.model_fields_set
                             if getattr(self, k) != type(self).model_fields[k].default)
            if changed:
                raise ValueError(f"{changed[0]} is set but the sweep is not adaptive: set adaptive.width or "
                                 "adaptive.compare too")
        return self

    @property
    def active(self) -> bool:
        return self.width is not None or self.compare is not None

    @property
    def binary(self) -> bool:
        return metric_kind(self.metric) == "bool"

    @property
    def sprt(self) -> PairedSprt:
        return PairedSprt(self.alpha, self.power, self.odds_ratio)

    def rule(self) -> str:
        """The stopping rule in one sentence (cells table, report notes)."""
        seeds = (f"seeds {self.seed_start}, {self.seed_start + 1}, ...: at least {self.min_seeds}, then batches of "
                 f"{self.batch}, at most {self.max_seeds} per cell")
        if self.compare is not None:
            return (f"paired SPRT on {self.metric} between the two values of {self.compare} (discordant seeds, "
                    f"alpha {self.alpha:g} two-sided, power {self.power:g} at odds ratio {self.odds_ratio:g}); {seeds}")
        kind = "Wilson" if self.binary else "Student t"
        return (f"until the {self.confidence:.0%} {kind} interval of {self.metric} is at most {self.width:g} wide; "
                f"{seeds}")


def numeric_metrics() -> dict[str, str]:
    """Runs columns a rule can use: name -> 'bool' or 'number' (imports Arrow: adaptive sweeps only)."""
    from masgrid._private.platform.results.table_schemas import RUN_METRICS

    return {name: "bool" if m.type == "bool" else "number" for name, m in RUN_METRICS.items()
            if m.type in ("bool", "int64", "float64")}


def metric_kind(metric: str) -> str | None:
    return numeric_metrics().get(metric)
