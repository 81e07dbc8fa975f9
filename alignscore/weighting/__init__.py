"""Weighting: a mass per token (none, idf-S, idf-L, and SEP for candidates)."""

from ..registry import Registry
from .base import WeightContext, Weighting, document_frequency, idf_from_df
from .schemes import Idf, Uniform, idf_l, idf_s

WEIGHTINGS: Registry[Weighting] = Registry("weighting")
WEIGHTINGS.register("none")(Uniform)
WEIGHTINGS.register("idf-S")(idf_s)
WEIGHTINGS.register("idf-L")(idf_l)


__all__ = ["WEIGHTINGS", "Idf", "Uniform", "WeightContext", "Weighting", "document_frequency",
           "idf_from_df", "idf_l", "idf_s"]
