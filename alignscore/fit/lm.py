"""Learning the language-model term's fixed scale and weight (:class:`alignscore.lm.LMTerm`) from
training data, with the alignment and its remapping fixed.

The location and scale are the mean and standard deviation of the LM's scores of the training
candidates (every language pair pooled), so that the term ``(lm_score - location) / scale`` has
mean 0 and deviation 1 there and its weight is in the alignment score's units; the weight is the
one of a grid that maximises the mean |r| over the training pairs of ``aligned + weight * term``
with the human scores (the smallest where several tie). One number each, never taken from the
texts later scored.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ConfigError

#: the weights tried: 0 to 0.2 by 0.0025 (the term standardised; alignment scores in [0, 1])
TIE = 1e-12  # mean |r| this close are equal (a term that changes no |r| still moves it by rounding)
WEIGHT_GRID = tuple(float(w) for w in np.round(np.arange(0, 0.2001, 0.0025), 4))


def lm_scale_of(lm_scores: Sequence[np.ndarray]) -> tuple[float, float]:
    """``(location, scale)``: the mean and standard deviation of the LM scores of every training
    candidate (the arrays of each language pair pooled).

    >>> lm_scale_of([np.array([-4.0, -2.0]), np.array([-3.0])])
    (-3.0, 0.816496580927726)
    """
    pooled = np.concatenate([np.asarray(v, dtype=np.float64) for v in lm_scores]) if lm_scores else np.empty(0)
    if len(pooled) < 2 or not np.isfinite(pooled).all() or float(pooled.std()) == 0.0:
        raise ConfigError(f"the LM's scale needs at least two finite, different LM scores of training candidates "
                          f"(got {len(pooled)})")
    return float(pooled.mean()), float(pooled.std())


def learn_lm_weight(aligned: Sequence[np.ndarray], terms: Sequence[np.ndarray], human: Sequence[np.ndarray],
                    grid: Sequence[float] = WEIGHT_GRID) -> tuple[float, dict[float, float]]:
    """The weight of ``grid`` whose mix ``aligned + weight * term`` has the best mean |r| with
    ``human`` over the language pairs (each argument one array per pair), the smallest of those
    that tie (within :data:`TIE`: float rounding); and the mean |r| of every weight tried.

    >>> x = [np.array([0.1, 0.2, 0.3, 0.4])]
    >>> t = [np.array([1.0, -1.0, 1.0, -1.0])]
    >>> h = [np.array([0.2, 0.1, 0.4, 0.3])]  # x + 0.1 * t
    >>> learn_lm_weight(x, t, h, grid=(0.0, 0.05, 0.1, 0.5))[0]
    0.1
    """
    if not (len(aligned) == len(terms) == len(human)) or not aligned:
        raise ConfigError("learning the LM's weight needs the alignment scores, the LM terms and the human scores "
                          "of the same language pairs")

    def mean_r(w: float) -> float:
        return float(np.mean([abs(np.corrcoef(np.asarray(x, float) + w * np.asarray(t, float), h)[0, 1])
                              for x, t, h in zip(aligned, terms, human)]))

    tried = {float(w): mean_r(float(w)) for w in grid}
    best = max(tried.values())
    return min(w for w, r in tried.items() if r >= best - TIE), tried


__all__ = ["TIE", "WEIGHT_GRID", "learn_lm_weight", "lm_scale_of"]
