"""Parquet -> pandas: loading, validity, statistics and the report index; each family's own
tables live in its folder. Never imports platform or actors."""

from masgrid._private.analysis.load import load_results
from masgrid._private.analysis.report import build_report
from masgrid._private.analysis.stats import welch_tests

__all__ = ["load_results", "build_report", "welch_tests"]
