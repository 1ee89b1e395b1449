"""Figures as every family writes them: a colour-blind-safe palette, PNG at 200 dpi with a
PDF beside it, and the caption (what was averaged, what the bars are, which runs were left
out) printed under the panels, so a figure read without its report still says what it shows.
Public as `masgrid.sdk.figures`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on clusters and CI
import matplotlib.pyplot as plt
from cycler import cycler

#: Okabe & Ito (2008), colour-blind-safe qualitative palette
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
plt.rcParams["axes.prop_cycle"] = cycler(color=list(OKABE_ITO))
DPI = 200
#: caption font size (points) and the characters of it that fit in an inch of figure width
CAPTION_PT = 8.0
CHARS_PER_INCH = 16


def save_figure(fig: plt.Figure, path: str | Path, note: str | None = None) -> Path:
    """Lay out, write as PNG (200 dpi) and PDF next to it (parent folders created), close,
    and return the PNG's path. `note` (the caption: what was averaged, what the error bars
    are, which runs were left out) is printed under the panels."""
    if note:
        # wrapped here, not by matplotlib, so the panels can be lifted by the caption's height
        # (a fixed margin let long captions run into the axis labels of narrow figures)
        width, height = fig.get_size_inches()
        lines = textwrap.wrap(note, width=max(30, int(width * CHARS_PER_INCH)))
        fig.text(0.01, 0.01, "\n".join(lines), fontsize=CAPTION_PT, ha="left", va="bottom")
        room = (len(lines) * CAPTION_PT * 1.3 / 72 + 0.1) / height
        fig.tight_layout(rect=(0, min(0.6, room), 1, 1))
    else:
        fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    fig.savefig(path.with_suffix(".pdf"))
    plt.close(fig)
    return path
