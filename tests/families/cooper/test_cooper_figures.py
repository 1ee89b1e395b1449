"""CooperBench figures: Wilson bars checked against the interval's formula written in the
test, 0-100 % rate axes, n on every point, captions naming the interval."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from masgrid.families.cooper import figures as cooper_figures
from masgrid.sdk.intervals import wilson_rate as wilson
from tests.analysis.figure_capture import capture
from tests.families.simas.test_simas_figures import _wilson


@pytest.mark.parametrize("seed", range(3))
def test_scaling_bars_are_wilson_intervals(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    counts = {(m, a): (lambda n: (rng.randint(0, n), n))(rng.randint(1, 40)) for m in ("m1", "m2") for a in (2, 3, 4)}
    table = pd.DataFrame([{"model": m, "agents": a, "n": n, "k": k,
                           **dict(zip(("rate", "ci_low", "ci_high"), wilson(k, n)))}
                          for (m, a), (k, n) in counts.items()])
    seen = capture(monkeypatch, cooper_figures)
    paths = cooper_figures.scaling_figure(table, tmp_path / "s.png", "Runs: all.")
    (fig, caption), = seen
    ax = fig.axes[0]
    assert ax.get_ylim() == (0, 100) and ax.get_ylabel() == "task success rate (%)"
    assert "95% Wilson" in caption and caption.endswith("Runs: all.")
    for bar, model in zip([c for c in ax.containers if isinstance(c, ErrorbarContainer)], ("m1", "m2")):
        (segments,) = bar.lines[2]
        for agents, seg in zip((2, 3, 4), segments.get_segments()):
            low, high = _wilson(*counts[(model, agents)])
            assert seg[0][1] == pytest.approx(100 * low) and seg[1][1] == pytest.approx(100 * high)
    assert {t.get_text() for t in ax.texts} == {f"n={n}" for _, n in counts.values()}
    assert paths[1].read_bytes().startswith(b"%PDF")
