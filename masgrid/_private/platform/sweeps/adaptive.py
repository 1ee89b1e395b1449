"""Adaptive sweeps (`sweep.adaptive`, docs/adaptive.md): run seeds per grid cell until a stopping
rule fires, and record why each cell stopped in `results_dir/cells/`.

A cell is a job of the grid without its seed. Its seeds are seed_start, seed_start+1, ... taken
in batches at the looks of `stopping.looks`; each seed is an ordinary run with its ordinary
run id, so an adaptive and a fixed sweep share runs, and a resumed adaptive sweep re-decides
from the recorded runs (same looks, same outcomes, same decisions) and runs nothing twice.
The settings are sweep settings: they choose which seeds run, never what a run is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from masgrid._private.analysis.cells import CELLS_DIR, CELLS_SCHEMA, read_cells
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.grid_cells import cell_key, cell_labels, flat as _flat
from masgrid._private.platform.run.run_outcome import USABLE
from masgrid.family import block_key
from masgrid._private.platform.sweeps.stopping import AdaptiveSettings, discordant, interval, looks, width_decision

if TYPE_CHECKING:
    from masgrid._private.platform.sweeps.budget import SweepBudget
    from masgrid._private.platform.sweeps.sweep import SweepResult, SweepSettings

__all__ = ["AdaptiveSettings", "build_cells", "check_adaptive", "read_cells", "run_adaptive"]

logger = logging.getLogger(__name__)

@dataclass
class Cell:
    key: str
    label: str
    base: RunConfig | None  # None: a simulated cell (`simulate`)
    pair: Cell | None = None
    value: str | None = None  # compare: this cell's value of the compared key
    first: bool = False  # compare: this cell holds the first of the two values (the test's "a")
    seeds: int = 0
    reason: str | None = None
    run_ids: list[str] = field(default_factory=list)
    _dump: dict[str, Any] = field(default_factory=dict)

    def config(self, seed: int) -> RunConfig:
        assert self.base is not None
        if not self._dump:
            self._dump = self.base.model_dump(mode="json")
        return RunConfig.from_mapping({**self._dump, "seed": seed})


def build_cells(cfgs: Sequence[RunConfig], settings: AdaptiveSettings) -> list[Cell]:
    """The grid's cells (pairs for `compare`); ConfigError, one line, when the grid does not fit the rule."""
    if not cfgs:
        raise ConfigError("sweep.adaptive: the sweep has no job")
    if len({c.seed for c in cfgs}) > 1:
        raise ConfigError("sweep.adaptive: the grid sweeps seed, but an adaptive sweep chooses the seeds itself "
                          "(sweep.adaptive.seed_start, +1, ...); drop seed from the grid")
    cells: dict[tuple[str, str], Cell] = {}
    flats: dict[tuple[str, str], dict[str, Any]] = {}
    for cfg in cfgs:
        ident = (cfg.results_dir, cell_key(cfg))
        if ident not in cells:
            cells[ident] = Cell(ident[1], "", cfg)
            flat = _flat(cfg.model_dump(mode="json"))
            flat.pop("seed")
            flats[ident] = flat
    for ident, label in cell_labels(flats).items():
        cells[ident].label = label
    if settings.compare is not None:
        _pair(list(cells), cells, flats, settings.compare)
    return list(cells.values())


def _pair(order: list[tuple[str, str]], cells: dict[tuple[str, str], Cell], flats: dict[tuple[str, str], dict[str, Any]],
          axis: str) -> None:
    axis = block_key(axis)  # `compare=mode` is its family's block key, as everywhere else
    if any(axis not in f for f in flats.values()):
        raise ConfigError(f"sweep.adaptive.compare: {axis} is not a configuration key")
    values = list(dict.fromkeys(str(flats[i][axis]) for i in order))
    if len(values) != 2:
        raise ConfigError(f"sweep.adaptive.compare: the grid must sweep {axis} over exactly two values, "
                          f"it has {len(values)} ({', '.join(values)})")
    groups: dict[str, list[tuple[str, str]]] = {}
    for ident in order:
        rest = {k: v for k, v in flats[ident].items() if k != axis}
        groups.setdefault(json.dumps(rest, sort_keys=True, default=str), []).append(ident)
    for members in groups.values():
        found = sorted(members, key=lambda i: values.index(str(flats[i][axis])))
        if [str(flats[i][axis]) for i in found] != values:
            raise ConfigError(f"sweep.adaptive.compare: cell {cells[members[0]].label} has no partner with "
                              f"{axis}={values[1] if str(flats[members[0]][axis]) == values[0] else values[0]}")
        a, b = cells[found[0]], cells[found[1]]
        a.pair, b.pair = b, a
        a.value, b.value = values
        a.first = True


def check_adaptive(cfgs: Sequence[RunConfig], settings: SweepSettings) -> str | None:
    """One line refusing a grid the adaptive rule cannot take (before Ray starts), else None."""
    if settings.adaptive.active:
        try:
            build_cells(cfgs, settings.adaptive)
        except ConfigError as exc:
            return f"masgrid run: {exc}"
    return None


# ---------------------------------------------------------------- decisions


Outcome = tuple[str | None, float | None]  # (status, metric value) of one run


def _values(cell: Cell, outcomes: dict[str, Outcome]) -> list[float | None]:
    """Per seed: the metric of a usable run, None for a failed, invalid, missing or null one."""
    out: list[float | None] = []
    for run_id in cell.run_ids:
        status, value = outcomes.get(run_id, (None, None))
        out.append(float(value) if status in USABLE and value is not None else None)
    return out


def decide(cell: Cell, outcomes: dict[str, Outcome], settings: AdaptiveSettings) -> str | None:
    """Why `cell` (with its `seeds` run) stops at this look, or None to go on."""
    values = _values(cell, outcomes)
    failed = sum(v is None for v in values)
    if cell.pair is None:
        assert settings.width is not None
        return width_decision(cell.seeds, [v for v in values if v is not None], settings.binary, settings.confidence,
                              settings.width, settings.min_seeds, settings.max_seeds, failed, settings.max_failed)
    other = _values(cell.pair, outcomes)
    if max(failed, sum(v is None for v in other)) > settings.max_failed:
        return "failed_runs"
    a, b = (values, other) if cell.first else (other, values)
    done = [n for n in looks(settings.min_seeds, settings.batch, settings.max_seeds) if n <= cell.seeds]
    verdict, _ = settings.sprt.decide([discordant(a[:n], b[:n]) for n in done])
    if verdict is not None:
        return verdict
    return "max_seeds" if cell.seeds >= settings.max_seeds else None


def cell_row(cell: Cell, outcomes: dict[str, Outcome], settings: AdaptiveSettings, sweep_id: str) -> dict[str, Any]:
    values = _values(cell, outcomes)
    usable = [v for v in values if v is not None]
    estimate, low, high = interval(usable, settings.binary, settings.confidence)
    wins = losses = None
    if cell.pair is not None:
        wins, losses = discordant(values, _values(cell.pair, outcomes))
    return {"sweep_id": sweep_id, "cell_key": cell.key, "cell": cell.label,
            "pair_key": cell.pair.key if cell.pair else None, "compare_value": cell.value, "rule": settings.rule(),
            "settings_json": settings.model_dump_json(), "metric": settings.metric, "seed_first": settings.seed_start,
            "n_seeds": cell.seeds, "n_runs": len(usable), "n_failed": len(values) - len(usable),
            "estimate": _num(estimate), "ci_low": _num(low), "ci_high": _num(high),
            "confidence": settings.confidence, "wins": wins, "losses": losses,
            "reason": cell.reason or "in_progress", "run_ids": list(cell.run_ids),
            "results_dir": cell.base.results_dir if cell.base else "", "updated_at": datetime.now(UTC)}


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value


def sweep_id(cells: Sequence[Cell], settings: AdaptiveSettings) -> str:
    blob = json.dumps([settings.model_dump(mode="json"), sorted(c.key for c in cells)], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def write_cells(rows: list[dict[str, Any]], sweep: str) -> None:
    """Each results_dir's rows to results_dir/cells/part-<sweep_id>.parquet, atomically."""
    import pyarrow.parquet as pq

    from masgrid._private.platform.results.storage import storage_errors

    by_dir: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_dir.setdefault(row["results_dir"], []).append(row)
    for results_dir, part in by_dir.items():
        folder = Path(results_dir) / CELLS_DIR
        with storage_errors(folder):
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"part-{sweep}.parquet"
            tmp = folder / f".part-{sweep}.parquet.tmp"
            pq.write_table(pa.Table.from_pylist(part, schema=CELLS_SCHEMA), tmp)
            os.replace(tmp, path)


def recorded_outcomes(results_dirs: Sequence[str], metric: str) -> dict[str, Outcome]:
    """run_id -> (status, metric) of every recorded run: one scan of each results_dir's runs."""
    import pyarrow.dataset as ds

    from masgrid._private.platform.results.table_schemas import runs_schema

    schema = runs_schema()
    wanted = pa.schema([schema.field(n) for n in dict.fromkeys(("run_id", "status", metric))])
    out: dict[str, Outcome] = {}
    for results_dir in results_dirs:
        files = sorted((Path(results_dir) / "runs").rglob("part-*.parquet"))
        tables = []
        try:
            tables = [ds.dataset([str(p) for p in files], format="parquet", schema=wanted).to_table()] if files else []
        except (pa.ArrowException, OSError):  # a damaged file: read the others (planning sets it aside)
            for path in files:
                try:
                    tables.append(ds.dataset(str(path), format="parquet", schema=wanted).to_table())
                except (pa.ArrowException, OSError):
                    continue
        for table in tables:
            for run_id, status, value in zip(table["run_id"].to_pylist(), table["status"].to_pylist(),
                                             table[metric].to_pylist()):
                out[run_id] = (status, value)
    return out


# ---------------------------------------------------------------- execution


def step(cells: Sequence[Cell], target: int, settings: AdaptiveSettings,
         run_id: Callable[[Cell, int], str]) -> list[tuple[Cell, int]]:
    """Give every open cell its seeds up to `target` (the next look); the (cell, seed) pairs added."""
    added = []
    for cell in cells:
        if cell.reason is None:
            for seed in range(settings.seed_start + cell.seeds, settings.seed_start + target):
                cell.run_ids.append(run_id(cell, seed))
                added.append((cell, seed))
            cell.seeds = max(cell.seeds, target)
    return added


def settle(cells: Sequence[Cell], outcomes: dict[str, Outcome], settings: AdaptiveSettings) -> None:
    """Apply the rule to every open cell at this look (a pair stops together)."""
    for cell in cells:
        if cell.reason is None:
            cell.reason = decide(cell, outcomes, settings)
            if cell.reason is not None and cell.pair is not None:
                cell.pair.reason = cell.reason


def simulate(streams: Sequence[Sequence[float | None]], settings: AdaptiveSettings,
             ) -> list[tuple[int, str]]:
    """The sweep's decisions on given outcome streams (per cell, per seed; None a failed run),
    exactly as `run_adaptive` takes them: (seeds run, reason) per cell. With `compare`, streams
    2i and 2i+1 form a pair (2i holds the first value). Tests and benchmarks."""
    cells = [Cell(str(i), f"cell {i}", None) for i in range(len(streams))]
    if settings.compare is not None:
        for a, b in zip(cells[::2], cells[1::2]):
            a.pair, b.pair, a.first = b, a, True
    outcomes: dict[str, Outcome] = {}
    for target in looks(settings.min_seeds, settings.batch, settings.max_seeds):
        for cell, seed in step(cells, target, settings, lambda c, s: f"{c.key}:{s}"):
            value = streams[int(cell.key)][seed - settings.seed_start]
            outcomes[f"{cell.key}:{seed}"] = ("failed", None) if value is None else ("ok", value)
        settle(cells, outcomes, settings)
    return [(c.seeds, c.reason or "in_progress") for c in cells]


def run_adaptive(cfgs: Sequence[RunConfig], settings: SweepSettings,
                 on_start: Callable[[], None] | None,
                 execute: Callable[[list[RunConfig], SweepResult, str], None],
                 budget: SweepBudget | None = None) -> SweepResult:
    """Open cells take their next seeds together, one `execute` (run_many) per look, until every
    cell has stopped; the cells table is rewritten after every look. A look the budget cut
    short ends the sweep: its open cells stop with reason `budget`, their seeds not started left out."""
    from masgrid._private.platform.sweeps.model_phases.runner import current_plan, needs_phases
    from masgrid._private.platform.sweeps.preflight import preflight
    from masgrid._private.platform.sweeps.sweep import SweepResult, plan_sweep, recorded_status

    rule = settings.adaptive
    cells = build_cells(cfgs, rule)
    results_dirs = sorted({c.base.results_dir for c in cells if c.base is not None})
    statuses = {d: recorded_status(d) for d in results_dirs}  # sets damaged files aside first
    bases = [c.base for c in cells if c.base is not None]
    phased = needs_phases(bases)
    if phased:  # models the sweep deploys: each look runs in model phases; refuse what cannot fit now
        from masgrid._private.platform.cluster.ray_session import ensure_ray

        ensure_ray(bases[0].execution.ray_address)
        current_plan(bases)
    preflight(bases, served=not phased)
    if on_start is not None:
        on_start()
    sid = sweep_id(cells, rule)
    result = SweepResult()
    outcomes = recorded_outcomes(results_dirs, rule.metric)
    logger.info("adaptive sweep %s: %d cells, %s", sid, len(cells), rule.rule())
    configs: dict[str, RunConfig] = {}

    def run_id(cell: Cell, seed: int) -> str:
        cfg = cell.config(seed)
        configs[cfg.run_id] = cfg
        return cfg.run_id

    for look, target in enumerate(looks(rule.min_seeds, rule.batch, rule.max_seeds)):
        open_cells = [c for c in cells if c.reason is None]
        if not open_cells:
            break
        batch = [configs[cell.run_ids[seed - rule.seed_start]] for cell, seed in step(cells, target, rule, run_id)]
        # later looks take new seeds only, so the statuses read before the sweep stay the ones to plan with
        plan = plan_sweep(batch, settings.retry_failed, settings.retry_invalid, statuses=statuses)
        result.total += plan.total
        result.skipped_ok += plan.skipped_ok
        result.skipped_failed += plan.skipped_failed
        if budget is not None:
            budget.include(batch)
        execute(plan.todo, result, f"adaptive look {look + 1}: {len(open_cells)} of {len(cells)} cells open, "
                                   f"{target} seeds each; {plan.skipped_ok + plan.skipped_failed} recorded, "
                                   f"{len(plan.todo)} to run")
        outcomes = recorded_outcomes(results_dirs, rule.metric)
        cut = {c.run_id for c in budget.not_started} if budget is not None else set()
        if cut:  # seeds never started are no outcome (not failures): the open cells stop undecided
            for cell in cells:
                cell.run_ids = [r for r in cell.run_ids if r not in cut]
                cell.seeds = len(cell.run_ids)
                cell.reason = cell.reason or "budget"
        else:
            settle(cells, outcomes, rule)
        write_cells([cell_row(c, outcomes, rule, sid) for c in cells], sid)
        if cut:
            break
    result.cells = [cell_row(c, outcomes, rule, sid) for c in cells]
    return result
