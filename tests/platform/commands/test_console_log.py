"""Library code logs; the CLI shows its records on stderr as bare messages, stdout stays the answer."""

from __future__ import annotations

import logging
import subprocess
import sys

from masgrid._private.platform.commands.console_log import _ConsoleHandler, configure_cli_logging


def test_records_go_to_stderr_once_and_stdout_stays_clean(capsys):
    configure_cli_logging()
    configure_cli_logging()  # idempotent: one handler, so one copy of each line
    assert sum(isinstance(h, _ConsoleHandler) for h in logging.getLogger("masgrid").handlers) == 1
    logging.getLogger("masgrid._private.platform.sweeps.ray_runs").info("note %d", 1)
    logging.getLogger("masgrid._private.platform.results.recorder").warning("masgrid: set aside x")
    logging.getLogger("masgrid.anything").debug("hidden")
    out, err = capsys.readouterr()
    assert out == "" and err == "note 1\nmasgrid: set aside x\n"


def test_a_library_import_prints_nothing_without_the_cli():
    code = ("import logging, masgrid; from masgrid._private.platform.sweeps import ray_runs; "
            "ray_runs.log.info('should not show')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "" and "should not show" not in done.stderr
