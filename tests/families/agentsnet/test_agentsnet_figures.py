"""AgentsNet figures: the bands and bars are ±1 standard error recomputed here in plain
Python from random runs, each point carries its n, axes are 0-1, captions say so."""

from __future__ import annotations

import math
import random

import pytest
from matplotlib.container import ErrorbarContainer

from masgrid.families.agentsnet import analysis as an
from masgrid.sdk import figures
from tests.analysis.figure_capture import capture
from tests.families.agentsnet.test_agentsnet_analysis import _runs


def _random(seed: int):
    rng = random.Random(seed)
    rows = [(m, n, f"agentsnet/{t}", g, rng.random() < 0.5, 1.0)
            for m in ("m1", "m2") for n in (4, 8) for t in ("coloring", "matching") for g in ("ws", "ba")
            for _ in range(rng.randint(1, 4))]
    return _runs(rows)


def _sd_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (sample SD / sqrt(n); 0 for one value), plain Python."""
    mean = sum(values) / len(values)
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values)) if len(values) > 1 else 0
    return mean, se


@pytest.mark.parametrize("seed", range(3))
def test_scaling_band_and_n_per_point(seed, tmp_path, monkeypatch):
    runs = _random(seed)
    seen = capture(monkeypatch, figures)
    path = an.figure_scaling(runs, tmp_path / "f5.png")
    (fig, caption), = seen
    ax = fig.axes[0]
    assert ax.get_ylim() == (0, 1) and "graph size" in ax.get_xlabel() and "standard error" in caption
    labels = []
    for task, band in zip(("coloring", "matching"), ax.collections):
        vertices = band.get_paths()[0].vertices
        for n in (4, 8):
            values = [float(s) for s in runs[(runs["problem"] == task) & (runs["agents"] == n)]["success"]]
            mean, se = _sd_se(values)
            edge = sorted({round(y, 9) for x, y in vertices if x == n})  # the band's lower and upper edge at n
            assert edge == pytest.approx(sorted({round(mean - se, 9), round(mean + se, 9)}))
            labels.append(f"n={len(values)}")
    assert sorted(t.get_text() for t in ax.texts) == sorted(labels)
    assert path.with_suffix(".pdf").exists()


def test_score_bars_carry_the_propagated_se(tmp_path, monkeypatch):
    runs = _random(5)
    seen = capture(monkeypatch, figures)
    an.figure_task_contributions(runs, tmp_path / "f4.png")
    (fig, caption), = seen
    assert "standard error" in caption
    for ax, size in zip(fig.axes, (4, 8)):
        (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        (segments,) = bars.lines[2]
        for model, seg in zip(("m1", "m2"), segments.get_segments()):
            task_ses = []
            for task in ("coloring", "matching"):
                cell_ses = []
                for g in ("ws", "ba"):
                    cell = runs[(runs["model"] == model) & (runs["agents"] == size) & (runs["problem"] == task)
                                & (runs["graph"] == g)]
                    cell_ses.append(_sd_se([float(s) for s in cell["success"]])[1])
                task_ses.append(math.sqrt(sum(s * s for s in cell_ses)) / len(cell_ses))
            expected = math.sqrt(sum(s * s for s in task_ses)) / 5
            assert (seg[1][1] - seg[0][1]) / 2 == pytest.approx(expected)
        assert {t.get_text() for t in ax.texts} == {f"n={len(runs[(runs['model'] == m) & (runs['agents'] == size)])}"
                                                   for m in ("m1", "m2")}
