"""Aligners: token vectors and masses of a pair -> scores (greedy matching, optimal transport)."""

from ..registry import Registry
from .base import Aligner, Alignment, PairBatch, weighted_mean
from .greedy import Greedy, greedy_match

ALIGNERS: Registry[Aligner] = Registry("aligner")
ALIGNERS.register("greedy")(Greedy)

__all__ = ["ALIGNERS", "Aligner", "Alignment", "Greedy", "PairBatch", "greedy_match", "weighted_mean"]
