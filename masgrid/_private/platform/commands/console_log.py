"""Where library log records go when masgrid runs as a command.

Library code only logs (`logging.getLogger(__name__)`, all under the `masgrid` logger); the
CLI decides to show them: progress notes (INFO) and problems alike on stderr, each as its
bare message, so stdout carries only what a command answers (`masgrid model tiny`'s JSON,
tables) and can be piped; terminals and `ray job submit` logs show both streams. A notebook
that wants the same calls `configure_cli_logging()` or sets up logging its own way.
"""

from __future__ import annotations

import logging
import sys


class _ConsoleHandler(logging.Handler):
    """Writes to the stderr current at emit time (pytest's capture, a redirected stream)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 - logging must never take the command down
            self.handleError(record)


def configure_cli_logging(level: int = logging.INFO) -> None:
    """Idempotent: one console handler on the `masgrid` logger (and the sweep launcher's)."""
    for name in ("masgrid", "hydra_plugins.masgrid_ray_launcher"):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        if not any(isinstance(h, _ConsoleHandler) for h in logger.handlers):
            handler = _ConsoleHandler()
            handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handler)
