"""`masgrid view`: a real process serving the site on 127.0.0.1 over real HTTP, and one-line
errors for bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from masgrid._private.site.serve import view_command


def test_view_serves_the_site_on_loopback_and_prints_the_address(ui_results, site):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "masgrid._private.platform.commands.cli", "view", str(ui_results), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("masgrid view: serving ") and "http://127.0.0.1:" in line, line
        address = line.split(" at ")[1].split()[0]
        assert address.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(address + "index.html", timeout=10) as response:
            assert b'data-page="index"' in response.read()
        with urllib.request.urlopen(address + "data/index.js", timeout=10) as response:
            assert response.read().startswith(b'masgridData("index",')
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(("argv", "message"), [
    (["/nonexistent-dir"], "is not a results directory (no runs/ in it)"),
    (["."], "is not a results directory"),
    (["x", "--port", "70000"], "--port: 0..65535"),
    ([], "the following arguments are required: results_dir"),
])
def test_bad_input_is_one_line(argv, message, capsys, tmp_path):
    if argv and argv[0] == "x":
        (tmp_path / "runs").mkdir()
        argv = [str(tmp_path), *argv[1:]]
    assert view_command(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
