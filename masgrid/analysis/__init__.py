"""Parquet -> pandas, the papers' tables and figures. Never imports platform or actors."""

from masgrid.analysis.load import load_results
from masgrid.analysis.report import build_report
from masgrid.analysis.stats import welch_tests
from masgrid.analysis.tables import table1, table2, table3, table6, table7, table8, table9, table10

__all__ = ["load_results", "build_report", "welch_tests", "table1", "table2", "table3", "table6", "table7",
           "table8", "table9", "table10"]
