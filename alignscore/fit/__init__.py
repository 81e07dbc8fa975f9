"""Fitting a composition's continuous settings to human judgments (``alignscore fit``): the
layer mix, the soft greedy temperature, the idf exponent, F-beta's beta, the token-class weights
and Sinkhorn's entropic strength, learned by gradient through the same functions the parts score
with (the greedy aligner, or exact WMD and Sinkhorn over tokens or n-gram windows), and judged by nested
cross-validation over language pairs; optionally with a challenge set's accuracy in the objective
(``goal``: a smooth surrogate for the gradient, the true accuracy for the choice)."""

from .features import Features, PairFeatures, RawLayers, extract
from .goal import Goal, read_challenge
from .model import LEARNABLE, Values, mean_r, pearson, scores_of
from .optimise import Fitted, Optimisation, fit_values, nested
from .outputs import FitResult
from .run import MIN_SEGMENTS, FitOptions, fit, fitted_spec

__all__ = ["Features", "FitOptions", "FitResult", "Fitted", "Goal", "LEARNABLE", "MIN_SEGMENTS", "Optimisation",
           "PairFeatures", "RawLayers", "Values", "extract", "fit", "fit_values", "fitted_spec", "mean_r", "nested",
           "pearson", "read_challenge", "scores_of"]
