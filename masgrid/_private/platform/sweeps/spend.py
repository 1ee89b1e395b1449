"""What runs spent, read from their runs rows, and what a run of each grid cell spends on average.

A run's spend is its tokens_in + tokens_out less the tokens its model calls took from the
response cache (`tokens_in_from_cache`, `tokens_out_from_cache`; 0 in results written before
the cache): a cached answer costs nothing. In US dollars the same tokens are priced with the
report's formula (_private/pricing.py) at the model preset's `price`, a team's at each
member's own (`team_by_model`). Prices come from the sweep's configuration, not from the recorded one,
so a run recorded before its preset had a price is priced too. A row without token counts
(its driver died before counting them) has no spend: callers say so instead of counting 0.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from masgrid._private.actors.backends.base import TokenPrice
from masgrid._private.pricing import usd_cost
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.grid_cells import cell_key
from masgrid._private.platform.run.run_outcome import USABLE

log = logging.getLogger(__name__)

#: statuses whose spend stands for a whole run, the ones projections average (a failed run's
#: spend counts against a budget, but it stopped early and says little about the next run)
COMPLETE = (*USABLE, "invalid")
#: the runs columns spend reads (those absent from older results read as null)
COLUMNS = ("run_id", "status", "tokens_in", "tokens_out", "tokens_in_from_cache", "tokens_out_from_cache",
           "team_by_model", "config_json")
#: ... of them, those holding text (the others are token counts)
_TEXT = ("run_id", "status", "team_by_model", "config_json")
#: a run in a sweep: the same run id in two results_dirs is two runs
Key = tuple[str, str]


@dataclass(frozen=True)
class Spend:
    tokens: float
    usd: float | None = None  # None: not priced (no budget in money asked)
    #: usd is an upper bound: a team run whose members have different prices took tokens
    #: from the cache, which is not recorded per member (priced at the cheapest member's)
    usd_bound: bool = False

    def __add__(self, other: Spend) -> Spend:
        usd = None if self.usd is None or other.usd is None else self.usd + other.usd
        return Spend(self.tokens + other.tokens, usd, self.usd_bound or other.usd_bound)

    def __sub__(self, other: Spend) -> Spend:
        usd = None if self.usd is None or other.usd is None else self.usd - other.usd
        return Spend(self.tokens - other.tokens, usd, self.usd_bound or other.usd_bound)

    def scaled(self, factor: float) -> Spend:
        return Spend(self.tokens * factor, None if self.usd is None else self.usd * factor, self.usd_bound)


def zero(priced: bool) -> Spend:
    return Spend(0.0, 0.0 if priced else None)


def prices(cfg: RunConfig) -> dict[str, TokenPrice | None]:
    """The price of each model the run's agents use, by the name the runs row gives it: the
    preset's, or each team member's."""
    team = cfg.team_resolved
    if team is None:
        return {cfg.model.name: cfg.model.price}
    return {name: member.settings.price for name, member in team.members.items()}


def unpriced(cfgs: Iterable[RunConfig]) -> str | None:
    """Why the runs cannot be priced in US dollars (one line), or None when they can."""
    for cfg in cfgs:
        team = cfg.team_resolved
        if team is None:
            if cfg.model.price is None:
                return (f"sweep.budget.usd needs the price of every model the runs use, and model preset "
                        f"{cfg.model.name} has none: set model.price.input_usd_per_mtok and "
                        "model.price.output_usd_per_mtok (US dollars per million tokens), or budget in tokens "
                        "(sweep.budget.tokens)")
            continue
        for name, member in team.members.items():
            if member.settings.price is None:
                return (f"sweep.budget.usd needs the price of every model the runs use, and team member {name} "
                        f"(preset {member.settings.name}) has none: set team.presets.{name}.price, or budget in "
                        "tokens (sweep.budget.tokens)")
        distinct = {(p.input_usd_per_mtok, p.output_usd_per_mtok) for p in prices(cfg).values() if p is not None}
        cached = [name for name, m in team.members.items() if getattr(m.settings, "cache", False)]
        if cached and len(distinct) > 1:
            return (f"sweep.budget.usd cannot price team runs whose members have different prices while the "
                    f"response cache is on (member {cached[0]}): cached tokens are not recorded per member. "
                    "Budget in tokens (sweep.budget.tokens), or turn the cache off")
    return None


def run_spend(row: Mapping[str, Any], cfg: RunConfig, priced: bool) -> Spend | None:
    """The spend of one recorded run of `cfg`'s cell (None: the row has no token counts, or
    a team member it names has no price)."""
    tokens_in, tokens_out = row.get("tokens_in"), row.get("tokens_out")
    if tokens_in is None or tokens_out is None:
        return None
    cached_in, cached_out = row.get("tokens_in_from_cache") or 0, row.get("tokens_out_from_cache") or 0
    tokens = float(tokens_in + tokens_out - cached_in - cached_out)
    if not priced:
        return Spend(tokens)
    table = prices(cfg)
    if cfg.team_resolved is None:
        price = table[cfg.model.name]
        if price is None:
            return None
        return Spend(tokens, usd_cost(tokens_in - cached_in, tokens_out - cached_out, price.input_usd_per_mtok,
                                      price.output_usd_per_mtok))
    members = json.loads(row.get("team_by_model") or "{}")
    used = [table.get(name) for name in members]
    if not members or any(p is None for p in used):
        return None
    known = [p for p in used if p is not None]
    usd = sum(usd_cost(stats["tokens_in"], stats["tokens_out"], p.input_usd_per_mtok, p.output_usd_per_mtok)
              for stats, p in zip(members.values(), known))
    if not (cached_in or cached_out):
        return Spend(tokens, usd)
    # cached tokens are counted per run, not per member: exact when the members share a price
    cheapest = TokenPrice(input_usd_per_mtok=min(p.input_usd_per_mtok for p in known),
                          output_usd_per_mtok=min(p.output_usd_per_mtok for p in known))
    bound = len({(p.input_usd_per_mtok, p.output_usd_per_mtok) for p in known}) > 1
    return Spend(tokens, usd - usd_cost(cached_in, cached_out, cheapest.input_usd_per_mtok,
                                        cheapest.output_usd_per_mtok), bound)


def read_rows(results_dir: str) -> list[dict[str, Any]]:
    """Every runs row under results_dir with the columns spend needs: one scan, file by file
    when a file cannot be read (left out: planning has set damaged files aside already)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    files = [str(p) for p in sorted((Path(results_dir) / "runs").rglob("part-*.parquet"))]
    if not files:
        return []
    schema = pa.schema([(c, pa.string() if c in _TEXT else pa.int64()) for c in COLUMNS])
    try:
        return ds.dataset(files, format="parquet", schema=schema).to_table().to_pylist()
    except (pa.ArrowException, OSError):
        rows = []
        for path in files:
            try:
                rows += _read(Path(path))
            except (pa.ArrowException, OSError) as exc:
                log.warning("masgrid: runs row %s unreadable (%s); its spend is not counted", path, exc)
        return rows


def _read(path: Path) -> list[dict[str, Any]]:
    """The rows of one runs file, only the columns spend needs (a row has about a hundred)."""
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    present = [c for c in COLUMNS if c in file.schema_arrow.names]
    return [{c: row.get(c) for c in COLUMNS} for row in file.read(columns=present).to_pylist()]


def read_row(cfg: RunConfig) -> dict[str, Any] | None:
    """The runs row a run of `cfg` wrote, or None."""
    import pyarrow as pa

    from masgrid._private.platform.results.recorder import partition_dir

    path = partition_dir(Path(cfg.results_dir), "runs", cfg.partition) / f"part-{cfg.run_id}.parquet"
    try:
        rows = _read(path)
    except (pa.ArrowException, OSError):
        return None
    return rows[0] if rows else None


class Ledger:
    """Measured spend per run and per grid cell: a sweep's own runs (their sum is what it has
    spent) and, for projections, every complete run of the same cells in its results_dirs,
    earlier sweeps' other seeds included."""

    def __init__(self, priced: bool) -> None:
        self.priced = priced
        self.ours: set[Key] = set()
        self.unknown: set[Key] = set()  # the sweep's runs that recorded no token counts
        self.spent = zero(priced)  # over the sweep's runs with a known spend
        self._runs: dict[Key, tuple[str, Spend | None, bool, bool]] = {}  # key -> (cell, spend, complete, ours)
        self._sums: dict[str | None, tuple[int, Spend]] = {}  # cell (None: the sweep's runs) -> complete runs, sum
        self._cells: dict[str, RunConfig] = {}  # cell -> one of its runs (its prices)
        self._rows: dict[str, list[dict[str, Any]]] = {}  # results_dir -> rows of runs outside the sweep
        self._cell_of: dict[int, str | None] = {}  # id(row) -> its cell, once worked out
        self._cell_keys: dict[Key, str] = {}  # a run of the sweep -> its cell (a hash of its config: cached)
        self._keys: dict[int, tuple[RunConfig, Key]] = {}  # id(config) -> it and its key (the config held: ids stay unique)

    def key(self, cfg: RunConfig) -> Key:
        """(results_dir, run_id), remembered per config object: the launcher asks about each
        queued run on every pass, and a run id is a hash of the whole config."""
        known = self._keys.get(id(cfg))
        if known is None:
            known = self._keys[id(cfg)] = (cfg, (cfg.results_dir, cfg.run_id))
        return known[1]

    def cells(self) -> dict[str, RunConfig]:
        """One run of each of the sweep's cells."""
        return dict(self._cells)

    def cell(self, cfg: RunConfig) -> str:
        key = self.key(cfg)
        if key not in self._cell_keys:
            self._cell_keys[key] = cell_key(cfg)
        return self._cell_keys[key]

    def include(self, cfgs: Sequence[RunConfig]) -> None:
        """Make these runs the sweep's, with the spend their results_dirs record, and read the
        recorded runs of their cells."""
        new = {self.key(c): c for c in cfgs if self.key(c) not in self.ours}
        for cfg in new.values():
            self._cells.setdefault(self.cell(cfg), cfg)
        for results_dir in sorted({c.results_dir for c in cfgs}):
            if results_dir not in self._rows:
                self._rows[results_dir] = read_rows(results_dir)
        for key in new:
            self.ours.add(key)
            if key in self._runs:  # read before as a run of the same cell: now the sweep's own
                cell, spend, complete, _ = self._runs[key]
                self._put(key, (cell, spend, complete, True))
        for results_dir, rows in self._rows.items():
            for row in rows:
                key = (results_dir, row["run_id"])
                if key in new:
                    self.record(new[key], row)
                elif key not in self._runs:
                    same = self._cell_run(row)
                    if same is not None:
                        self._put(key, (self.cell(same), run_spend(row, same, self.priced),
                                        row.get("status") in COMPLETE, False))

    def record(self, cfg: RunConfig, row: Mapping[str, Any] | None) -> None:
        """A run of the sweep ended (or was found recorded) with this runs row (None: no row)."""
        key = self.key(cfg)
        self.ours.add(key)
        spend = None if row is None else run_spend(row, cfg, self.priced)
        self._put(key, (self.cell(cfg), spend, row is not None and row.get("status") in COMPLETE, True))

    def projection(self, cfg: RunConfig) -> tuple[Spend | None, str]:
        """What a run of `cfg` will likely spend, and from what: the mean of its cell's complete
        runs, else of the sweep's; (None, why) with neither."""
        for cell, source in ((self.cell(cfg), "cell mean"), (None, "sweep mean")):
            n, total = self._sums.get(cell, (0, zero(self.priced)))
            if n:
                return total.scaled(1 / n), f"{source} of {n} run{'s' if n > 1 else ''}"
        return None, "no run of the sweep or of its cell has finished"

    def cell_stats(self, cfg: RunConfig) -> tuple[int, Spend | None]:
        """Complete runs with a known spend in cfg's cell, and their mean spend."""
        n, total = self._sums.get(self.cell(cfg), (0, zero(self.priced)))
        return n, total.scaled(1 / n) if n else None

    def _put(self, key: Key, entry: tuple[str, Spend | None, bool, bool]) -> None:
        """Set a run's (cell, spend, complete, the sweep's own), replacing what it counted before."""
        self._count(key, -1)
        self._runs[key] = entry
        self._count(key, +1)

    def _count(self, key: Key, step: int) -> None:
        if key not in self._runs:
            return
        cell, spend, complete, ours = self._runs[key]
        if spend is None:
            if ours:
                (self.unknown.add if step > 0 else self.unknown.discard)(key)
            return
        signed = spend if step > 0 else zero(self.priced) - spend
        if ours:
            self.spent = self.spent + signed
        if complete:
            for group in (cell, None) if ours else (cell,):
                n, total = self._sums.get(group, (0, zero(self.priced)))
                self._sums[group] = (n + step, total + signed)

    def _cell_run(self, row: Mapping[str, Any]) -> RunConfig | None:
        """The sweep's run of the cell a recorded run outside the sweep belongs to, if any."""
        if id(row) in self._cell_of:
            cell = self._cell_of[id(row)]
            return self._cells.get(cell) if cell else None
        cell = None
        try:
            data = json.loads(row.get("config_json") or "null")
        except ValueError:
            data = None
        # only rows that can be of a cell of the sweep are validated (a config per row costs)
        like = isinstance(data, dict) and any(
            all(data.get(k) == getattr(c, k) for k in ("task", "protocol", "agents")) for c in self._cells.values())
        if like and isinstance(data, dict):
            base = next(iter(self._cells.values()))
            try:  # the seed of a run of the sweep: its prompts are rendered already, and a cell has no seed
                cell = cell_key(RunConfig.from_mapping({**data, "seed": base.seed}))
            except (ConfigError, ValueError, KeyError) as exc:
                log.debug("recorded run %s left out of the cost estimates: %s", row.get("run_id"), exc)
        self._cell_of[id(row)] = cell
        return self._cells.get(cell) if cell else None
