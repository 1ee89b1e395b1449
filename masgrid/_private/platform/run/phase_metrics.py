"""Per-phase run metrics: the same quantities as the whole-run columns, for phase 1 and phase 2.

Two-phase conditions (MAS-Bench `abl_message`, `camoc`) run the task twice: the whole-run
columns (`rounds`, `tokens_*`, `te`, `cr`) add both phases up, while MAS-Bench's Table 1
reports one phase's accounting (docs/tasks/masbench.md, "Per-phase metrics"). The driver
takes each agent's counters at every phase boundary; a phase's value is the difference.

Columns (suffix `_phase1`, `_phase2`; `_phase2` is null for one-phase runs, and `_phase1`
then equals the whole run):
- `rounds`: eq. 5 within the phase, max over agents of the model calls the phase gave it;
- `tokens_in`, `tokens_out`, `tokens_total`, `tokens_comm`: sums over the phase's calls
  and commands (retries included, as in the whole-run sums);
- `success`, `sr`, `check`, `submitted`: the task's score of the submissions the phase
  ended with (phase 2's equal the whole run's, which scores the final submissions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Sequence

from masgrid._private.envs.tasks.base import Score

#: per-agent counters read at each phase boundary (AgentStats attributes)
COUNTERS = ("rounds", "tokens_in", "tokens_out", "tokens_comm")
#: the metrics recorded per phase, as `<name>_phase1` / `<name>_phase2` run columns
PHASED = ("success", "sr", "check", "submitted", "rounds", "tokens_in", "tokens_out", "tokens_total",
          "tokens_comm")
MAX_PHASES = 2


@dataclass(frozen=True)
class PhaseUsage:
    """What one phase cost: eq. 5's R within the phase and its token sums."""

    rounds: int
    tokens_in: int
    tokens_out: int
    tokens_comm: int

    @property
    def tokens_total(self) -> int:
        return self.tokens_in + self.tokens_out


def mark(stats: Sequence[Any]) -> list[tuple[int, ...]]:
    """Each agent's counters now (one tuple per agent, in COUNTERS order)."""
    return [tuple(int(getattr(s, name)) for name in COUNTERS) for s in stats]


def phase_usage(before: list[tuple[int, ...]], after: list[tuple[int, ...]]) -> PhaseUsage:
    """The counters spent between two marks; R is the largest per-agent round count."""
    deltas = [[a - b for a, b in zip(agent_after, agent_before)] for agent_before, agent_after in zip(before, after)]
    sums = [sum(column) for column in zip(*deltas)] if deltas else [0] * len(COUNTERS)
    rounds = max((d[0] for d in deltas), default=0)
    return PhaseUsage(rounds=rounds, tokens_in=sums[1], tokens_out=sums[2], tokens_comm=sums[3])


def phase_columns(usages: Sequence[PhaseUsage], scores: Sequence[Score],
                  submissions: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """`<metric>_phase<p>` for p = 1, 2; a phase the run did not have gives nulls."""
    if not (len(usages) == len(scores) == len(submissions)) or not 1 <= len(usages) <= MAX_PHASES:
        raise ValueError(f"phase metrics: {len(usages)} usages, {len(scores)} scores and {len(submissions)} "
                         f"submission lists for at most {MAX_PHASES} phases")
    out: dict[str, Any] = {}
    for p in range(1, MAX_PHASES + 1):
        if p > len(usages):
            out.update({f"{name}_phase{p}": None for name in PHASED})
            continue
        usage, score, subs = usages[p - 1], scores[p - 1], submissions[p - 1]
        values = {
            "success": score.success,
            "sr": sum(score.correct) / len(score.correct) if score.correct and None not in score.correct else None,  # type: ignore[arg-type]
            "check": score.metrics.get("check"),
            "submitted": sum(s is not None for s in subs),
            "rounds": usage.rounds,
            "tokens_in": usage.tokens_in,
            "tokens_out": usage.tokens_out,
            "tokens_total": usage.tokens_total,
            "tokens_comm": usage.tokens_comm,
        }
        out.update({f"{name}_phase{p}": values[name] for name in PHASED})
    return out
