"""Weighting: a mass per token (none, idf-S, idf-L, and SEP for candidates; norm for WRD), times
per-class weights of special tokens, punctuation, stop words and subword continuations."""

from ..registry import Registry
from .base import DocumentFrequencies, WeightState, Weighting, document_frequency, idf_from_df
from .classes import TOKEN_CLASSES, TokenClassWeights, token_class_multipliers, token_classes
from .schemes import Corpus, IdfL, IdfS, Norm, Uniform

WEIGHTINGS: Registry[Weighting] = Registry("weighting")
WEIGHTINGS.register("none")(Uniform)
WEIGHTINGS.register("idf-S")(IdfS)
WEIGHTINGS.register("idf-L")(IdfL)
WEIGHTINGS.register("norm")(Norm)


__all__ = ["TOKEN_CLASSES", "WEIGHTINGS", "Corpus", "DocumentFrequencies", "IdfL", "IdfS", "Norm", "TokenClassWeights",
           "Uniform", "WeightState", "Weighting", "document_frequency", "idf_from_df", "token_class_multipliers",
           "token_classes"]
