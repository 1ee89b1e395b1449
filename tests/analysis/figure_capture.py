"""Test helper: keep the figures a module hands to its save function, so a test can read
their artists (a closed figure's artists stay readable) and captions; the files are still
written as usual."""

from __future__ import annotations

from types import ModuleType

import matplotlib.pyplot as plt
import pytest


def capture(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[tuple[plt.Figure, str | None]]:
    """Wrap `module.save_figure`; return the (figure, caption) pairs it receives."""
    seen: list[tuple[plt.Figure, str | None]] = []
    original = module.save_figure

    def keep(fig, path, note=None):
        seen.append((fig, note))
        return original(fig, path, note)
    monkeypatch.setattr(module, "save_figure", keep)
    return seen
