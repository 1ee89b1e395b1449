"""Figure 2 as a reader of a paper needs it: axis labels with units, a legend, error bars of
one standard error computed here independently from the runs, n per point, rate axes 0-100,
a caption, PNG at >= 200 dpi and a PDF; every report figure uses the colour-blind-safe palette."""

from __future__ import annotations

import itertools
import math
import random

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from PIL import Image

from masgrid.families.masbench.figures import figure2, figure2_figure
from masgrid.sdk.figures import OKABE_ITO
from masgrid.families.masbench.table1_with_spread import table1_spread


def _runs(seed: int = 0) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for model, n, protocol, i in itertools.product(("m1", "m2"), (2, 4, 8), ("kv", "p2p"), range(rng.randint(1, 4))):
        rows.append({"run_id": f"{model}-{n}-{protocol}-{i}", "status": rng.choice(["ok", "ok", "degraded"]),
                     "task": "sorting", "condition": "base", "model": model, "agents": n, "protocol": protocol,
                     "k": 2, "mode": "random", "sr": rng.random(), "success": rng.random() < 0.5,
                     "rounds": rng.randint(2, 9), "te": rng.uniform(1, 50), "cr": rng.random(),
                     "tokens_total": rng.randint(10, 1000)})
    rows.append({**rows[0], "run_id": "bad", "status": "invalid", "sr": 99.0})  # never counted
    return pd.DataFrame(rows)


def _se(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) / math.sqrt(len(values))


@pytest.mark.parametrize("seed", range(3))
def test_error_bars_are_one_standard_error_over_runs(seed):
    runs = _runs(seed)
    usable = runs[runs["status"] != "invalid"]
    fig, caption = figure2_figure(runs, "sorting", None, "base")
    try:
        ax_sr, ax_r, ax_te, ax_cr = fig.axes[:4]
        assert ax_sr.get_ylabel() == "SR (% of agents correct)" and ax_cr.get_ylabel() == "CR (% of tokens)"
        assert "10^5 tokens" in ax_te.get_ylabel() and "model calls" in ax_r.get_ylabel()
        assert all(ax.get_xlabel() == "agents N" for ax in fig.axes[:4])
        assert ax_sr.get_ylim() == (0, 100) and ax_cr.get_ylim() == (0, 100)
        assert [t.get_text() for t in ax_sr.get_legend().get_texts()] == ["m1", "m2"]
        assert "standard error" in caption and "mean over n runs" in caption
        for ax, column, scale in ((ax_sr, "sr", 100), (ax_te, "te", 1)):
            bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
            assert len(bars) == 2
            for bar, model in zip(bars, ("m1", "m2")):
                line, _, (segments,) = bar.lines
                for (x, y), seg in zip(line.get_xydata(), segments.get_segments()):
                    values = [v * scale for v in usable[(usable["model"] == model) & (usable["agents"] == x)][column]]
                    assert y == pytest.approx(sum(values) / len(values))
                    assert (seg[1][1] - seg[0][1]) / 2 == pytest.approx(_se(values))
            labels = {t.get_text() for t in ax.texts}
            counts = usable.groupby(["model", "agents"]).size()
            assert labels == {f"n={n}" for n in counts}
    finally:
        plt.close(fig)


def test_figure2_writes_a_200_dpi_png_and_a_pdf_in_the_palette(tmp_path):
    path = figure2(_runs(), tmp_path / "figure2.png", note="Runs: all.")
    image = Image.open(path)
    assert min(image.info["dpi"]) >= 199.5
    assert (tmp_path / "figure2.pdf").read_bytes().startswith(b"%PDF")
    colours = {c for _, c in image.convert("RGB").getcolors(maxcolors=1 << 22)}
    first = tuple(int(OKABE_ITO[0][i:i + 2], 16) for i in (1, 3, 5))
    assert first in colours  # the first model is drawn in the palette's first colour


def test_table1_spread_gives_n_sd_and_se():
    runs = _runs(3)
    usable = runs[runs["status"] != "invalid"]
    table = table1_spread(runs)
    for (model, condition, protocol), row in table.iterrows():
        values = [v * 100 for v in usable[(usable["model"] == model) & (usable["protocol"] == protocol)]["sr"]]
        assert row["n"] == len(values)
        assert row["SR% se"] == pytest.approx(_se(values)) if len(values) > 1 else math.isnan(row["SR% se"])
