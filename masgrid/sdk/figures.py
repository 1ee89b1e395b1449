"""Writing a figure as every family does: the palette, PNG and PDF, the caption under the panels."""

from masgrid._private.analysis.figures import CAPTION_PT, CHARS_PER_INCH, DPI, OKABE_ITO, save_figure

__all__ = ["CAPTION_PT", "CHARS_PER_INCH", "DPI", "OKABE_ITO", "save_figure"]
