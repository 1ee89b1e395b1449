"""`masgrid show RESULTS_DIR RUN_ID [--agent I]`: one run's conversations as the models saw them.

The messages come from the events table alone (`masgrid._private.analysis.transcript`), so what is
printed is what a reader of the Parquet files can check. Rich panels in a terminal, plain
text in a pipe (for grep and diff).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn, TextIO

import pandas as pd
import pyarrow.dataset as ds
from rich.console import Console

from masgrid._private.analysis.transcript import Turn, turns
from masgrid._private.platform.results.table_schemas import EVENTS_SCHEMA

USAGE = "masgrid show RESULTS_DIR RUN_ID [--agent I]"
STYLES = {"system": "cyan", "user": "green", "assistant": "magenta"}


class ShowError(Exception):
    """Bad input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ShowError(message)


def load_run_events(results_dir: Path, run_id: str) -> pd.DataFrame:
    """The events of one run (any attempt's files, finished or not)."""
    events_dir = results_dir / "events"
    if not events_dir.is_dir():
        raise ShowError(f"{results_dir} is not a results directory (no events/ in it)")
    # The full schema: files written before a column existed read back with it empty.
    dataset = ds.dataset(events_dir, format="parquet", schema=EVENTS_SCHEMA, partitioning="hive")
    events = dataset.to_table(filter=ds.field("run_id") == run_id).to_pandas()
    if events.empty:
        raise ShowError(f"no run {run_id!r} in {results_dir}")
    if events["role"].isna().all():
        raise ShowError(f"run {run_id} was recorded before events kept the messages (no role column)")
    return events


def _label(turn: Turn) -> str:
    what = {"prompt": "system prompt", "model_call": "reply", "observation": "input"}.get(turn.kind, turn.kind)
    if turn.verb == "invalid_reply":
        what = "invalid reply (retried)"
    elif turn.verb == "retry":
        what = "retry request"
    if turn.error:
        what += f", failed: {turn.error}"
    if turn.tool_call_id is not None:
        what += f", answers tool call {turn.tool_call_id}"
    if turn.capped:
        what += ", capped: only its start was recorded (execution.max_recorded_chars)"
    return f"phase {turn.phase} · round {turn.round} · {turn.role} · {what}"


def render_plain(run_id: str, selected: list[Turn], out: TextIO) -> None:
    header = None
    for turn in selected:
        if (turn.agent, turn.phase) != header:
            header = (turn.agent, turn.phase)
            out.write(f"=== run {run_id} · agent {turn.agent} · phase {turn.phase} ===\n")
        out.write(f"--- {_label(turn)} ---\n{turn.display}\n")


def render_rich(run_id: str, selected: list[Turn], console: Console | None = None) -> None:
    from rich.panel import Panel
    from rich.rule import Rule
    from rich.text import Text

    console = console or Console()
    header = None
    for turn in selected:
        if (turn.agent, turn.phase) != header:
            header = (turn.agent, turn.phase)
            console.print(Rule(f"run {run_id} · agent {turn.agent} · phase {turn.phase}"))
        style = "red" if turn.verb == "invalid_reply" or turn.error else STYLES.get(turn.role, "white")
        # Text, not markup: model output is full of [brackets]
        console.print(Panel(Text(turn.display), title=Text(_label(turn)), title_align="left", border_style=style))


def show(results_dir: Path, run_id: str, agent: int | None, out: TextIO | None = None) -> None:
    events = load_run_events(results_dir, run_id)
    agents = sorted(int(a) for a in events["agent"].dropna().unique())  # null: a scorer's model (resolver)
    if agent is not None and agent not in agents:
        raise ShowError(f"agent {agent} is not in run {run_id} (agents {agents[0]}..{agents[-1]})")
    selected = [t for t in turns(events) if agent is None or t.agent == agent]
    out = out or sys.stdout
    if out.isatty():
        render_rich(run_id, selected)
    else:
        render_plain(run_id, selected, out)


def show_command(argv: list[str]) -> int:
    parser = _Parser(prog="masgrid show", usage=USAGE, description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("--agent", type=int, default=None)
    try:
        args = parser.parse_args(argv)
        show(args.results_dir, args.run_id, args.agent)
    except ShowError as exc:
        print(f"masgrid show: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `masgrid show ... | head`
        return 0
    return 0
