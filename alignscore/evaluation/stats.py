"""Meta-evaluation statistics: how well metric scores agree with human judgments.

- :func:`correlation`: Pearson r (the WMT segment-level DA statistic), Spearman rho or Kendall tau,
  with scipy's two-sided p-value for "no correlation".
- :func:`williams_test`: Williams (1959) test for two dependent correlations that share one
  variable (two metrics against the same human scores), as used in the WMT metrics tasks
  (Graham & Baldwin, 2014); :func:`not_beaten` marks the cells no other cell significantly beats,
  the cells the papers print in bold.
- :func:`bootstrap_ci`: seeded percentile bootstrap confidence intervals over segments.

All functions take numpy arrays and are vectorised over the metrics / resamples they compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats as sps

from ..errors import ConfigError

CORRELATIONS = ("pearson", "spearman", "kendall")


def correlation(x: np.ndarray, y: np.ndarray, method: str = "pearson") -> tuple[float, float]:
    """``(r, p)``: the correlation of ``x`` and ``y`` and its two-sided p-value against 0.

    ``pearson``: ``r = cov(x, y) / (sd(x) sd(y))``; ``spearman``: Pearson r of the ranks;
    ``kendall``: tau-b. A constant input has no correlation: ``(nan, nan)``.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError(f"correlation needs two 1-d arrays of one length, not {x.shape} and {y.shape}")
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    if method == "pearson":
        res = sps.pearsonr(x, y)
    elif method == "spearman":
        res = sps.spearmanr(x, y)
    elif method == "kendall":
        res = sps.kendalltau(x, y)
    else:
        raise ConfigError(f"unknown correlation {method!r}; choose one of: {', '.join(CORRELATIONS)}")
    return float(res.statistic), float(res.pvalue)


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair: ``x, y [..., n] -> [...]``,
    ``r = sum (x - mx)(y - my) / sqrt(sum (x - mx)^2 sum (y - my)^2)``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    num = (xc * yc).sum(axis=-1)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def williams_test(r12: np.ndarray | float, r13: np.ndarray | float, r23: np.ndarray | float,
                  n: int) -> tuple[np.ndarray, np.ndarray]:
    """Williams' test that ``r12 > r13`` for dependent correlations sharing variable 1.

    Variable 1 is the human score, 2 and 3 are two metrics; ``r23`` is the correlation of the
    metrics with each other; ``n`` the number of segments. With
    ``K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23`` (the determinant of the 3x3 correlation
    matrix)::

        t = (r12 - r13) sqrt((n - 1)(1 + r23))
            / sqrt(2 K (n - 1) / (n - 3) + (r12 + r13)^2 / 4 * (1 - r23)^3)

    follows Student's t with ``n - 3`` degrees of freedom. Returns ``(t, p)`` with the one-sided
    p-value ``P(T >= t)`` (WMT's use: does metric 2 correlate better than metric 3?); the
    two-sided p-value is ``2 * min(p, 1 - p)``. Broadcasts over array inputs.
    """
    if n < 4:
        raise ConfigError(f"Williams' test needs at least 4 segments, not {n}")
    r12, r13, r23 = (np.asarray(v, dtype=np.float64) for v in (r12, r13, r23))
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    den = 2 * k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23)) / np.sqrt(den)
    # Two identical metrics (r23 = 1, r12 = r13) are not different: t = 0, not nan.
    t = np.where((r12 == r13) & ~np.isnan(r12), 0.0, t)
    return t, sps.t.sf(t, n - 3)


def williams_matrix(scores: np.ndarray, human: np.ndarray) -> np.ndarray:
    """``p [K, K]``: ``p[i, j]`` is the one-sided Williams p-value that metric ``i`` correlates
    better with ``human`` than metric ``j`` does, for ``scores [K, n]``.

    Each metric is oriented first so that its correlation with the human scores is >= 0 (the
    tables report absolute r); the diagonal is 1 (a metric never beats itself).
    """
    scores = np.asarray(scores, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    k, n = scores.shape
    r_h = pearson_rows(scores, np.broadcast_to(human, scores.shape))
    sign = np.where(r_h < 0, -1.0, 1.0)
    oriented = scores * sign[:, None]
    r_h = np.abs(r_h)
    r_mm = np.corrcoef(oriented) if k > 1 else np.ones((1, 1))
    _, p = williams_test(r_h[:, None], r_h[None, :], r_mm, n)
    p = np.where(np.isnan(p), 1.0, p)
    np.fill_diagonal(p, 1.0)
    return p


def not_beaten(scores: np.ndarray, human: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """``[K]`` bool: metric ``i`` is not significantly outperformed by any other metric under
    Williams' test at level ``alpha`` (one-sided), i.e. ``min_j p[j, i] >= alpha``. These are
    the cells BERTScore Table 9 and the WMT reports print in bold."""
    p = williams_matrix(scores, human)
    return (p >= alpha).all(axis=0)


@dataclass(frozen=True)
class Interval:
    """A bootstrap confidence interval: the statistic on the data, and the interval's ends."""

    estimate: float
    low: float
    high: float


def bootstrap_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """``[resamples, n]`` indices drawn uniformly with replacement (numpy ``default_rng(seed)``).
    Using one draw for every metric of a data set makes their intervals paired."""
    if resamples < 1:
        raise ConfigError("the bootstrap needs at least one resample")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def bootstrap_ci(statistic: Callable[..., np.ndarray], *arrays: np.ndarray, resamples: int = 1000,
                 confidence: float = 0.95, seed: int = 0, indices: np.ndarray | None = None
                 ) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over the segments (the last axis).

    ``statistic(*arrays)`` must accept arrays with a leading resample axis (``[B, n]``) and
    return ``[B]``; it is evaluated once on the data and once on all ``B`` resamples
    ``arrays[..., idx_b]`` together. The interval is the ``(1 - c) / 2`` and ``(1 + c) / 2``
    quantiles (linear interpolation) of the resampled statistics, NaNs ignored.
    """
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), not {confidence}")
    arrays = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    n = arrays[0].shape[-1]
    if indices is None:
        indices = bootstrap_indices(n, resamples, seed)
    estimate = float(np.asarray(statistic(*(a[None, :] for a in arrays)))[0])
    values = np.asarray(statistic(*(a[indices] for a in arrays)), dtype=np.float64)
    alpha = (1 - confidence) / 2
    low, high = np.nanquantile(values, [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high))


def abs_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``|r|`` row-wise, for :func:`bootstrap_ci` (the tables report absolute r)."""
    return np.abs(pearson_rows(x, y))
