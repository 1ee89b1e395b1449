"""`masgrid show`: prints each agent's conversation as the server received it; bad input is
one line and exit status 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from masgrid._private.analysis.transcript import turns
from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.commands.show import ShowError, load_run_events, render_rich
from tests.platform.test_audit_trail import run, sorting_script
from tests.support.chat_server import agent_and_turn


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[dict]]:
    tmp = tmp_path_factory.mktemp("show")
    cfg, requests = run(tmp, sorting_script, task="sorting", protocol="broadcast", agents=3, k=2, seed=4)
    return tmp, cfg.run_id, requests


def in_order(text: str, parts: list[str]) -> bool:
    at = 0
    for part in parts:
        at = text.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def test_show_prints_what_the_server_received(recorded, capsys) -> None:
    tmp, run_id, requests = recorded
    assert main(["show", str(tmp), run_id, "--agent", "1"]) == 0
    out = capsys.readouterr().out  # not a terminal: plain text
    last = max((r for r in requests if agent_and_turn(r)[0] == 1), key=lambda r: len(r["messages"]))
    assert in_order(out, [m["content"] for m in last["messages"]])
    assert "agent 0" not in out and "\x1b[" not in out
    assert main(["show", str(tmp), run_id]) == 0
    everyone = capsys.readouterr().out
    assert all(f"=== run {run_id} · agent {a} · phase 1 ===" in everyone for a in range(3))


def test_rich_rendering_keeps_brackets(recorded) -> None:
    tmp, run_id, _ = recorded
    console = Console(record=True, force_terminal=True, width=120)
    render_rich(run_id, turns(load_run_events(tmp, run_id)), console)
    text = console.export_text()
    assert "submit_result [1, 2]" in text and "phase 1 · round 0 · system" in text


@pytest.mark.parametrize("args", [["{tmp}", "feedbeefdeadbeef"], ["{tmp}/missing", "{run}"], ["{tmp}", "{run}", "--agent", "3"],
                                  ["{tmp}", "{run}", "--agent", "x"], ["{tmp}"]])
def test_bad_input_is_one_line_and_exit_2(recorded, args: list[str]) -> None:
    tmp, run_id, _ = recorded
    argv = [a.format(tmp=tmp, run=run_id) for a in args]
    done = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "show", *argv], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("masgrid show: ") and done.stderr.count("\n") == 1, done.stderr


def test_show_needs_no_runs_row(recorded, tmp_path: Path, capsys) -> None:
    """A run still in progress (events written, no runs row yet) can be shown too."""
    tmp, run_id, _ = recorded
    shutil.copytree(tmp / "events", tmp_path / "events")
    assert main(["show", str(tmp_path), run_id, "--agent", "2"]) == 0
    assert "agent 2 · phase 1" in capsys.readouterr().out


def test_results_from_before_the_audit_trail_are_refused_clearly(recorded, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    tmp, run_id, _ = recorded
    for path in (tmp / "events").rglob("part-*.parquet"):
        target = tmp_path / path.relative_to(tmp)
        target.parent.mkdir(parents=True, exist_ok=True)
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["role", "source"]), target)
    with pytest.raises(ShowError, match="before events kept the messages"):
        load_run_events(tmp_path, run_id)
