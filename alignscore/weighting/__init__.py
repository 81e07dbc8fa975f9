"""Weighting: a mass per token (none, idf-S, idf-L, and SEP for candidates; norm for WRD)."""

from ..registry import Registry
from .base import DocumentFrequencies, WeightState, Weighting, document_frequency, idf_from_df
from .schemes import Corpus, IdfL, IdfS, Norm, Uniform

WEIGHTINGS: Registry[Weighting] = Registry("weighting")
WEIGHTINGS.register("none")(Uniform)
WEIGHTINGS.register("idf-S")(IdfS)
WEIGHTINGS.register("idf-L")(IdfL)
WEIGHTINGS.register("norm")(Norm)


__all__ = ["WEIGHTINGS", "Corpus", "DocumentFrequencies", "IdfL", "IdfS", "Norm", "Uniform", "WeightState", "Weighting",
           "document_frequency", "idf_from_df"]
