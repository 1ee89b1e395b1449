"""Parquet -> pandas: loading, validity, statistics and the report index; each family's own
tables live in its folder. Never imports platform or actors."""

from masgrid.analysis.load import load_results
from masgrid.analysis.report import build_report
from masgrid.analysis.stats import welch_tests

__all__ = ["load_results", "build_report", "welch_tests"]
