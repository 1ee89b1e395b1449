"""Intervals of rates, the same in every family's tables and figures and in the core's
stopping rules: Wilson score for a success rate, Newcombe for a difference of two rates
(both statsmodels), and the mean with its spread over runs."""

from masgrid._private.analysis.dispersion import (mean_sd_n, mean_se, newcombe, spread_columns, wilson,
                                                 wilson_rate)

__all__ = ["mean_sd_n", "mean_se", "newcombe", "spread_columns", "wilson", "wilson_rate"]
