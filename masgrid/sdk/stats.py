"""Tests between conditions: Welch's t-test per metric and Holm's correction across them."""

from masgrid._private.analysis.stats import WELCH_COLUMNS, holm, welch, welch_tests

__all__ = ["WELCH_COLUMNS", "holm", "welch", "welch_tests"]
