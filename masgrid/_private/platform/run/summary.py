"""Terminal summary of a finished run: the core numbers, then the family's headline and its
own columns with their units (`Family.metrics`); a two-phase run adds its scored phase."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.run_summary import RunSummary
from masgrid.family import family_of


def print_summary(cfg: RunConfig, s: RunSummary, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"masgrid run {s.run_id}", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    shown = cfg.columns()  # k is null where the task has no such notion (CooperBench)
    family = family_of(cfg.task)
    own = tuple(family.top_level) if family is not None else ()  # the family's top-level options (MAS-Bench's mode)
    workload = "".join(f" {key}={shown[key]}" for key in ("k", *own) if shown[key] is not None)
    setting = (f"task={cfg.task} protocol={cfg.protocol} agents={cfg.agents}{workload} "
               f"condition={cfg.condition} backend={cfg.backend} model={shown['model']} seed={cfg.seed}")
    rows = [("config", setting), ("status", _status(s.status))]
    if shown["team_placement"] is not None:  # a mixed-model team: `model` above is its composition
        rows.insert(1, ("team", f"placement={shown['team_placement']} strong={shown['team_strong']}"))
    if s.error:
        rows.append(("error", s.error.splitlines()[0]))
    if s.model_calls is not None and cfg.backend != "scripted":
        rate = s.model_errors / s.model_calls if s.model_calls and s.model_errors is not None else 0.0
        rows.append(("model calls", f"{s.model_calls} ({s.model_errors} failed, {rate:.1%})"))
    both = " (both phases)" if s.phase2 else ""
    rows += [("success", str(s.success)), ("SR", _fmt(s.sr)), (f"rounds R{both}", _fmt(s.rounds))]
    if s.headline not in ("sr", "success", "rounds"):  # the family reports another number first
        rows.append((f"{s.headline} (headline){both if s.headline in s.phase2 else ''}", _fmt(s.headline_value)))
    units = _units(cfg.task)
    rows += [(f"{name}{both if name in s.phase2 else ''}", _fmt(value, units.get(name)))
             for name, value in s.metrics.items() if name != s.headline]
    if s.phase2:  # the family's tables report the scored phase (e.g. docs/tasks/masbench.md, "Per-phase metrics")
        rows.append(("phase 2 (scored)", ", ".join(f"{name} {_fmt(value)}" for name, value in s.phase2.items()
                                                   if name in ("rounds", s.headline) or name in s.metrics)))
    rows += [
        ("wall time", f"{s.wall_s:.2f} s"),
        ("results", f"{s.results_dir}/{{runs,agents,events}} (pandas.read_parquet)"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)


def _status(status: str) -> str:
    note = {"degraded": " (some model calls failed; see error)",
            "invalid": " (too many model calls failed: left out of tables)"}.get(status, "")
    return status + note


def _units(task: str) -> dict[str, str]:
    family = family_of(task)
    return {name: m.unit for name, m in family.metrics.items()} if family is not None else {}


def _fmt(value: object, unit: str | None = None) -> str:
    """Floats to 4 significant digits (the rows' precision is not the point of a terminal summary)."""
    if value is None:
        return "-"
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{text} ({unit})" if unit and unit != "-" else text
