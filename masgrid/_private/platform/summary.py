"""Terminal summary of a finished run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from masgrid._private.platform.config import RunConfig
from masgrid._private.platform.driver import RunSummary


def print_summary(cfg: RunConfig, s: RunSummary, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"masgrid run {s.run_id}", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    shown = cfg.columns()  # k and mode are null where the task has no such notion (CooperBench)
    workload = "".join(f" {key}={shown[key]}" for key in ("k", "mode") if shown[key] is not None)
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
    both = " (both phases)" if s.rounds_phase2 is not None else ""
    rows += [
        ("success", str(s.success)),
        ("SR", _fmt(s.sr, "{:.3f}")),
        (f"rounds R{both}", _fmt(s.rounds, "{}")),
        (f"token efficiency TE{both}", _fmt(s.te, "{:.2f}")),
        (f"communication ratio CR{both}", _fmt(s.cr, "{:.3f}")),
    ]
    if both:  # the tables report the scored phase (docs/tasks/masbench.md, "Per-phase metrics")
        rows.append(("phase 2 (scored)", f"R {_fmt(s.rounds_phase2, '{}')}, TE {_fmt(s.te_phase2, '{:.2f}')}, "
                                         f"CR {_fmt(s.cr_phase2, '{:.3f}')}"))
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


def _fmt(value: object, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
