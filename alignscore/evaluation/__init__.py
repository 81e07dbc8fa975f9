"""Meta-evaluation: data sets with human judgments, and the statistics that compare metrics."""

from .stats import (CORRELATIONS, Interval, bootstrap_ci, bootstrap_indices, correlation, not_beaten,
                    pearson_rows, williams_matrix, williams_test)
from .wmt import LangPair, discover, load_daseg

__all__ = ["CORRELATIONS", "Interval", "LangPair", "bootstrap_ci", "bootstrap_indices", "correlation",
           "discover", "load_daseg", "not_beaten", "pearson_rows", "williams_matrix", "williams_test"]
