"""SIMAS figures as a paper needs them: the error bars are one standard error over repeats,
recomputed here in plain Python from the runs (not the population SD of the accuracy
table); rate axes 0-100; labels, n per point, captions; PNG at >= 200 dpi and a PDF."""

from __future__ import annotations

import math
import random

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from PIL import Image

from masgrid.families.simas import figures as simas_figures
from tests.analysis.figure_capture import capture
from tests.families.simas.test_simas_analysis import fake_runs


def _caption(fig: plt.Figure) -> str:
    return " ".join(" ".join(t.get_text() for t in fig.texts).split())  # the caption is wrapped


def _per_seed(runs, model: str, condition: str, n: int) -> list[float]:
    """Per-repeat accuracies (%) of one cell, usable runs only."""
    seeds: dict[int, list[float]] = {}
    for r in runs[runs["status"] == "ok"].itertuples():
        if (r.model, r.condition, r.agents) == (model, condition, n):
            seeds.setdefault(r.seed, []).append(r.accuracy)
    return [100 * sum(v) / len(v) for v in seeds.values()]


def _mean_se(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def _bars(ax) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


@pytest.mark.parametrize("seed", range(4))
def test_inverted_u_bars_are_one_standard_error_over_repeats(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    runs = fake_runs(rng, seeds=rng.randint(2, 5), questions=rng.randint(3, 7))
    seen = capture(monkeypatch, simas_figures)
    path = simas_figures.inverted_u(runs, tmp_path / "u.png", note="Runs: all.")
    ((fig, _),) = seen
    ax = fig.axes[0]
    assert ax.get_xlabel() == "agents n" and ax.get_ylabel() == "accuracy (% of questions)"
    assert ax.get_ylim() == (0, 100)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["m1", "m2"]
    caption = _caption(fig)
    assert "standard error of the mean over repeats" in caption and "population" not in caption
    assert "Runs: all." in caption
    for bar, model in zip(_bars(ax), ("m1", "m2")):
        line, _, (segments,) = bar.lines
        for (x, y), seg in zip(line.get_xydata(), segments.get_segments()):
            mean, se = _mean_se(_per_seed(runs, model, "base", int(x)))
            assert y == pytest.approx(mean)
            assert (seg[1][1] - seg[0][1]) / 2 == pytest.approx(se)
    labels = {t.get_text() for t in ax.texts}
    assert all("x" in label for label in labels) and len(labels) >= 1
    for label in labels:  # repeats x questions per point, as counted from the runs
        repeats, questions = map(int, label.split("x"))
        assert 1 <= repeats <= runs["seed"].nunique() and 1 <= questions <= runs["question_id"].nunique()
    assert min(Image.open(path).info["dpi"]) >= 199.5
    assert path.with_suffix(".pdf").read_bytes().startswith(b"%PDF")


def test_accuracy_vs_tokens_combines_cell_standard_errors(tmp_path, monkeypatch):
    rng = random.Random(7)
    runs = fake_runs(rng, seeds=3)
    other = fake_runs(random.Random(8), seeds=4)
    other["subject"] = "virology"
    runs = pd.concat([runs, other], ignore_index=True)
    seen = capture(monkeypatch, simas_figures)
    path = simas_figures.accuracy_vs_tokens(runs, tmp_path / "t.png")
    ((fig, _),) = seen
    ax = fig.axes[0]
    assert ax.get_ylim() == (0, 100) and "tokens per question" in ax.get_xlabel()
    assert "standard error" in _caption(fig) and "cells" in _caption(fig)
    for bar, model in zip(_bars(ax), ("m1", "m2")):
        line, _, (segments,) = bar.lines
        for n, ((_, y), seg) in zip(sorted(runs["agents"].unique()), zip(line.get_xydata(), segments.get_segments())):
            cells = []
            for frame in (runs[runs["subject"] == "formal_logic"], runs[runs["subject"] == "virology"]):
                cells.append(_mean_se(_per_seed(frame, model, "base", int(n))))
            assert y == pytest.approx(sum(m for m, _ in cells) / 2)
            assert (seg[1][1] - seg[0][1]) / 2 == pytest.approx(math.sqrt(sum(s * s for _, s in cells)) / 2)
    assert path.with_suffix(".pdf").exists()


def test_cot_vs_simas_bars_and_axes(tmp_path, monkeypatch):
    runs = fake_runs(random.Random(3), ns=(1, 3), seeds=3, conditions=("base", "cot"))
    runs.loc[runs["condition"] == "cot", "agents"] = 1
    seen = capture(monkeypatch, simas_figures)
    simas_figures.cot_vs_simas(runs, tmp_path / "c.png")
    ((fig, _),) = seen
    ax = fig.axes[0]
    assert ax.get_ylim() == (0, 100) and ax.get_ylabel() == "accuracy (% of questions)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["CoT", "SIMAS n=1", "SIMAS n=3"]
    assert "repeats per bar: 3" in ax.get_xlabel() and "standard error over repeats" in _caption(fig)
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    expected = sorted(round(_mean_se(_per_seed(runs, m, c, n))[0], 6)
                      for m in ("m1", "m2") for c, n in (("cot", 1), ("base", 1), ("base", 3)))
    assert heights == expected


def test_cot_vs_simas_without_cot_says_so(tmp_path, monkeypatch):
    seen = capture(monkeypatch, simas_figures)
    simas_figures.cot_vs_simas(fake_runs(random.Random(1)), tmp_path / "c.png")
    assert "no CoT runs" in " ".join(t.get_text() for t in seen[0][0].axes[0].texts)


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval, from its formula (not statsmodels)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize("seed", range(3))
def test_judge_win_rates_carry_wilson_intervals(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    rows = [{"pair_id": f"p{i}", "order": "combined", "winner": rng.choice(["simas", "cot", "tie"]), "judge_model": "j",
             "prompt_hash": "h", "model": "m1", "task": "simas/open", "discussion_rounds": 3, "agents": n,
             "status": "ok", "simas_score": rng.random(), "cot_score": rng.random()}
            for i, n in enumerate(rng.choice([2, 4]) for _ in range(rng.randint(4, 30)))]
    judgments = pd.DataFrame(rows)
    seen = capture(monkeypatch, simas_figures)
    path = simas_figures.judge_bars(judgments, tmp_path / "j.png")
    left = seen[0][0].axes[0]
    assert left.get_ylim() == (0, 100) and "Wilson" in _caption(seen[0][0])
    names = {"SIMAS": "simas", "CoT": "cot", "tie": "tie"}
    for bar, label in zip(_bars(left), [t.get_text() for t in left.get_legend().get_texts()]):
        (segments,) = bar.lines[2]
        for n, seg in zip(sorted(judgments["agents"].unique()), segments.get_segments()):
            cell = judgments[judgments["agents"] == n]
            low, high = _wilson(int((cell["winner"] == names[label]).sum()), len(cell))
            assert seg[0][1] == pytest.approx(100 * low, abs=1e-6) and seg[1][1] == pytest.approx(100 * high, abs=1e-6)
    right = seen[0][0].axes[1]
    assert "standard error over the judged pairs" in _caption(seen[0][0])
    columns = {"SIMAS": "simas_score", "CoT": "cot_score"}
    for bar, label in zip(_bars(right), [t.get_text() for t in right.get_legend().get_texts()]):
        (segments,) = bar.lines[2]
        for n, seg in zip(sorted(judgments["agents"].unique()), segments.get_segments()):
            values = judgments.loc[judgments["agents"] == n, columns[label]].tolist()
            mean = sum(values) / len(values)
            se = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values)) \
                if len(values) > 1 else 0.0
            assert seg[0][1] == pytest.approx(mean - se, abs=1e-9) and seg[1][1] == pytest.approx(mean + se, abs=1e-9)
    assert path.with_suffix(".pdf").exists()
