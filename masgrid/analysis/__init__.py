"""Parquet -> pandas, the papers' tables and figures. Never imports platform or actors."""

from masgrid.analysis.load import load_results

__all__ = ["load_results"]
