"""Aligners: token vectors and masses of a pair -> scores (greedy matching, optimal transport)."""

from ..registry import Registry
from .barycenter import BaryScore
from .base import Aligner, Alignment, PairBatch, weighted_mean
from .greedy import Greedy, greedy_match
from .optimal import SCORE_FORMS, WMD, Sinkhorn, TransportAligner

ALIGNERS: Registry[Aligner] = Registry("aligner")
ALIGNERS.register("greedy")(Greedy)
ALIGNERS.register("wmd")(WMD)
ALIGNERS.register("sinkhorn")(Sinkhorn)
ALIGNERS.register("baryscore")(BaryScore)

__all__ = ["ALIGNERS", "SCORE_FORMS", "WMD", "Aligner", "Alignment", "BaryScore", "Greedy", "PairBatch", "Sinkhorn",
           "TransportAligner", "greedy_match", "weighted_mean"]
