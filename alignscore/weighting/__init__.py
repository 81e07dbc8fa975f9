"""Weighting: a mass per token (none, idf-S, idf-L, and SEP for candidates; norm for WRD)."""

from ..registry import Registry
from .base import DocumentFrequencies, WeightState, Weighting, document_frequency, idf_from_df
from .schemes import Corpus, Idf, Norm, Uniform, idf_l, idf_s

WEIGHTINGS: Registry[Weighting] = Registry("weighting")
WEIGHTINGS.register("none")(Uniform)
WEIGHTINGS.register("idf-S")(idf_s)
WEIGHTINGS.register("idf-L")(idf_l)
WEIGHTINGS.register("norm")(Norm)


__all__ = ["WEIGHTINGS", "Corpus", "DocumentFrequencies", "Idf", "Norm", "Uniform", "WeightState", "Weighting", "document_frequency",
           "idf_from_df", "idf_l", "idf_s"]
