"""Meta-evaluation statistics: how well metric scores agree with human judgments.

- :func:`correlation`: Pearson r (the WMT segment-level DA statistic), Spearman rho or Kendall tau,
  with scipy's two-sided p-value for "no correlation".
- :func:`williams_test`: Williams (1959) test for two dependent correlations that share one
  variable (two metrics against the same human scores), as used in the WMT metrics tasks
  (Graham & Baldwin, 2014); :func:`not_beaten` marks the cells no other cell significantly beats,
  the cells the papers print in bold.
- :func:`bootstrap_ci`: seeded percentile bootstrap confidence intervals over segments.
- :func:`leave_one_pair_out`: the nested estimate of runs chosen on all language pairs but one,
  scored on the one left out, with paired bootstrap intervals; what ``alignscore fit`` and
  ``alignscore tune`` report.
- :func:`bootstrap_mean`: sacreBLEU's ``--confidence`` for a corpus mean of segment scores.
- :func:`bootstrap_r_difference` and :func:`permutation_r_difference`: paired resampling tests
  of the difference in |Pearson r| of two metrics against the same human scores (Deutsch et al.,
  2021), beside Williams' test.

All functions take numpy arrays and are vectorised over the metrics / resamples they compare.

Scores that are constant up to rounding (:mod:`~alignscore.evaluation.rounding`) have no correlation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Generic, Mapping, Sequence, TypeVar

import numpy as np

from ..errors import ConfigError
from .rounding import ROUNDING_UNITS, flat, flat_rows, flat_text, rounding_unit  # noqa: F401  (stats' own names too)

CORRELATIONS = ("pearson", "spearman", "kendall")


def correlation(x: np.ndarray, y: np.ndarray, method: str = "pearson") -> tuple[float, float]:
    """``(r, p)``: the correlation of ``x`` and ``y`` and its two-sided p-value against 0.

    ``pearson``: ``r = cov(x, y) / (sd(x) sd(y))``; ``spearman``: Pearson r of the ranks;
    ``kendall``: tau-b. A constant input, up to rounding (:func:`flat`), has no correlation:
    ``(nan, nan)``.
    """
    x_eps, y_eps = rounding_unit(x), rounding_unit(y)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError(f"correlation needs two 1-d arrays of one length, not {x.shape} and {y.shape}")
    if len(x) < 3 or flat(x, x_eps) or flat(y, y_eps):
        return float("nan"), float("nan")
    from scipy import stats as sps  # here, not at import: scipy.stats costs most of a second

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
    ``r = sum (x - mx)(y - my) / sqrt(sum (x - mx)^2 sum (y - my)^2)``; NaN where a row of
    either is constant up to rounding (:func:`flat_rows`)."""
    undefined = flat_rows(x) | flat_rows(y)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    num = (xc * yc).sum(axis=-1)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(undefined, np.nan, num / den)


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
    from scipy.special import stdtr

    return t, stdtr(n - 3, -t)  # P(T >= t) = P(T <= -t)


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
    return percentile_interval(estimate, values, confidence)


def percentile_interval(estimate: float, values: np.ndarray, confidence: float = 0.95) -> Interval:
    """``estimate`` with the central ``confidence`` range of the resampled ``values`` (linear
    interpolation, NaNs ignored)."""
    alpha = (1 - confidence) / 2
    low, high = np.nanquantile(values, [alpha, 1 - alpha])
    return Interval(float(estimate), float(low), float(high))


def pooled_abs_r(blocks: Sequence[np.ndarray], humans: Sequence[np.ndarray], resamples: int,
                 seed: int) -> np.ndarray:
    """``[K, resamples]``: the mean over data sets of the |r| of each of ``K`` metrics
    (``blocks[d] [K, n_d]``) with the human scores ``humans[d] [n_d]``, resampling each data
    set's segments (one draw per data set, in order, shared by the metrics: paired)."""
    rng = np.random.default_rng(seed)
    out = np.zeros((len(blocks[0]), resamples))
    for block, human in zip(blocks, humans):
        idx = rng.integers(0, len(human), size=(resamples, len(human)))
        for k, x in enumerate(block):
            out[k] += np.abs(pearson_rows(x[idx], human[idx])) / len(blocks)
    return out


T = TypeVar("T")


@dataclass(frozen=True)
class Fold(Generic[T]):
    """One fold of :func:`leave_one_pair_out`: the language pair ``held_out``, what each compared
    run is (``chosen``: chosen on the other pairs) and its ``abs_r`` on every segment of
    ``held_out`` (NaN where undefined)."""

    held_out: str
    chosen: Mapping[str, T]
    abs_r: Mapping[str, float]


@dataclass(frozen=True)
class CrossValidation(Generic[T]):
    """What :func:`leave_one_pair_out` found: the ``folds``, each run's mean held-out |r| with
    its interval (``estimates``) and the first run's gain over each other (``gains``); all
    empty with fewer than two language pairs."""

    folds: tuple[Fold[T], ...] = ()
    estimates: Mapping[str, Interval] = field(default_factory=dict)
    gains: Mapping[str, Interval] = field(default_factory=dict)


def leave_one_pair_out(pairs: Sequence[str], choose: Callable[[list[list[int]]], Sequence[Mapping[str, T]]],
                       score: Callable[[int, Mapping[str, T]], tuple[np.ndarray, np.ndarray]],
                       resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> CrossValidation[T]:
    """Nested leave-one-language-pair-out with paired bootstrap intervals.

    For each pair ``k`` held out, the compared runs are chosen on the other pairs and scored on
    every segment of ``k``. The estimate of a run is the mean over the folds of its held-out
    |r|; the first run's gain over another is the difference of their estimates. Each held-out
    pair's segments are resampled with replacement, one draw per pair from one
    ``default_rng(seed)``, in order (:func:`pooled_abs_r`), the same draws for every run, so the
    gains' intervals are paired; a resample's value is the mean over the folds of its |r|, and
    an interval is the central ``confidence`` range of the resampled values
    (:func:`percentile_interval`).

    Parameters
    ----------
    pairs : sequence of str
        The language pairs' names.
    choose : callable
        ``choose(trains)``: for each fold ``k`` (``trains[k]``: the indices of every pair but
        ``k``, in order), the compared runs by name (the same names in every fold; the first is
        the one whose gains are taken), chosen on ``trains[k]``. Given every fold at once, so
        that a search can run them together; with fewer than two pairs, called with none.
    score : callable
        ``score(k, chosen)``: the scores ``[K, n_k]`` of fold ``k``'s runs (in ``chosen``'s
        order) on every segment of pair ``k``, and the human scores ``[n_k]``.
    resamples : int
        Resamples of each held-out pair's segments.
    seed : int
        Seed of the resamples.
    confidence : float
        The intervals' coverage.

    Returns
    -------
    CrossValidation

    Examples
    --------
    Choosing, on the other pairs, the better of two fixed metrics:

    >>> rng = np.random.default_rng(0)
    >>> human = [rng.normal(size=20) for _ in range(3)]
    >>> metric = {"good": [h + rng.normal(size=20) for h in human], "poor": [rng.normal(size=20) for h in human]}
    >>> def r(name, lps): return np.mean([abs(np.corrcoef(metric[name][l], human[l])[0, 1]) for l in lps])
    >>> choose = lambda trains: [{"chosen": max(metric, key=lambda m: r(m, t)), "poor": "poor"} for t in trains]
    >>> score = lambda k, chosen: (np.stack([metric[m][k] for m in chosen.values()]), human[k])
    >>> cv = leave_one_pair_out(["a", "b", "c"], choose, score, resamples=100)
    >>> [f.chosen["chosen"] for f in cv.folds], cv.gains["poor"].low > 0
    (['good', 'good', 'good'], True)
    """
    trains = [[i for i in range(len(pairs)) if i != k] for k in range(len(pairs))] if len(pairs) >= 2 else []
    chosen = choose(trains)
    if not trains:
        return CrossValidation()
    names = list(chosen[0])
    held = [score(k, c) for k, c in enumerate(chosen)]
    folds = tuple(Fold(pairs[k], dict(c), dict(zip(names, abs_pearson(s, np.broadcast_to(h, s.shape)).tolist())))
                  for k, (c, (s, h)) in enumerate(zip(chosen, held)))
    boot = dict(zip(names, pooled_abs_r([s for s, _ in held], [h for _, h in held], resamples, seed)))
    est = {n: float(np.mean([f.abs_r[n] for f in folds])) for n in names}
    first = names[0]
    estimates = {n: percentile_interval(est[n], boot[n], confidence) for n in names}
    gains = {n: percentile_interval(est[first] - est[n], boot[first] - boot[n], confidence) for n in names[1:]}
    return CrossValidation(folds, estimates, gains)


def abs_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``|r|`` row-wise, for :func:`bootstrap_ci` (the tables report absolute r)."""
    return np.abs(pearson_rows(x, y))


SACREBLEU_SEED = 12345  # sacreBLEU's default seed (its SACREBLEU_SEED environment variable)


def _finite_vectors(*arrays: np.ndarray, minimum: int = 1) -> tuple[np.ndarray, ...]:
    """``arrays`` as float64 1-d arrays of one length (at least ``minimum``), all finite."""
    out = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    if any(a.ndim != 1 or a.shape != out[0].shape for a in out):
        raise ConfigError(f"expected 1-d arrays of one length, not {', '.join(str(a.shape) for a in out)}")
    if len(out[0]) < minimum:
        raise ConfigError(f"need at least {minimum} segment(s), not {len(out[0])}")
    if not all(np.isfinite(a).all() for a in out):
        raise ConfigError("scores must be finite numbers (no NaN or infinity)")
    return out


def _order_statistic_interval(values: np.ndarray, confidence: float, drawn: int | None = None,
                              what: str = "resamples") -> tuple[float, float]:
    """sacreBLEU's interval from ``B`` resampled values: sorted, the entries at
    ``k = floor(B (1 - c) / 2)`` and ``B - 1 - k`` (for ``c = 0.95``, sacreBLEU's ``B // 40``).
    ``drawn``: how many ``what`` were drawn, where those without a defined value were dropped."""
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), not {confidence}")
    ordered = np.sort(values)
    k = int(math.floor(len(ordered) * (1 - confidence) / 2 + 1e-9))  # 1e-9: 0.05 / 2 * 40 is 1, not 0.999..
    if k < 1:  # with no resample beyond either end the "interval" is the extremes of a few draws
        need = math.ceil(2 / (1 - confidence) - 1e-9)
        dropped = (f" with a defined correlation (of {drawn} drawn)" if drawn is not None and drawn != len(ordered)
                   else "")
        raise ConfigError(f"a {confidence:.0%} percentile interval needs at least {need} {what}, not "
                          f"{len(ordered)}{dropped}", (what,))
    return float(ordered[k]), float(ordered[len(ordered) - 1 - k])


@dataclass(frozen=True)
class BootstrapMean(Interval):
    """:func:`bootstrap_mean`'s result: ``estimate`` (the corpus mean of the data), ``mean`` (the
    mean of the resampled corpus means, sacreBLEU's ``mu``), the interval ``low`` .. ``high`` and
    its ``half_width`` (sacreBLEU's ``+-`` figure), for ``resamples`` draws with ``seed``."""

    mean: float
    resamples: int
    seed: int

    @property
    def half_width(self) -> float:
        return 0.5 * (self.high - self.low)


def bootstrap_mean(values: np.ndarray, resamples: int = 1000, seed: int = SACREBLEU_SEED,
                   confidence: float = 0.95) -> BootstrapMean:
    """Bootstrap confidence interval of a corpus mean, as ``sacrebleu --confidence`` computes it.

    sacreBLEU (``metrics/base.py`` ``corpus_score(n_bootstrap=...)`` and ``significance.py``
    ``_bootstrap_resample``): draw ``B`` resamples of the ``n`` segments with replacement,
    ``numpy.random.default_rng(seed).choice(n, size=(B, n), replace=True)`` (the same draws as
    :func:`bootstrap_indices`), defaults ``B = 1000`` (``--confidence-n``) and ``seed = 12345``;
    recompute the corpus score of each resample (here the mean ``x*_b = mean_i x[idx_bi]``); sort
    them; the interval is the percentile interval from order statistics, ``x*_(k)`` ..
    ``x*_(B-1-k)`` with ``k = B // 40`` for 95% (no interpolation); sacreBLEU prints
    ``mu +- half`` with ``mu = mean_b x*_b`` (the bootstrap mean, not the observed score) and
    ``half = (x*_(B-1-k) - x*_(k)) / 2``: a percentile interval reported as a half-width, not
    ``mean +- 1.96 sd``. Other ``confidence`` levels use ``k = floor(B (1 - c) / 2)``.

    Raises:
        ConfigError: no segments, a non-finite value, ``resamples < 1``, or a confidence outside (0, 1).
    """
    (x,) = _finite_vectors(values)
    idx = bootstrap_indices(len(x), resamples, seed)
    means = x[idx].mean(axis=1)
    low, high = _order_statistic_interval(means, confidence)
    return BootstrapMean(float(x.mean()), low, high, float(means.mean()), resamples, seed)


@dataclass(frozen=True)
class DifferenceTest:
    """A paired test of ``|r(A, H)| - |r(B, H)|``: the observed ``difference``, its two-sided
    ``p_value``, an interval ``low`` .. ``high`` (what it is depends on the test: see the
    function) and the number of ``resamples`` that entered them."""

    difference: float
    p_value: float
    low: float
    high: float
    resamples: int


def _oriented(a: np.ndarray, b: np.ndarray, human: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` multiplied by the sign of their Pearson r with ``human`` (so their r is
    ``|r|``), after checking that the three have a defined correlation."""
    for name, v in (("metric A", a), ("metric B", b), ("the human scores", human)):
        if flat(v):
            raise ConfigError(f"{name} is constant ({flat_text(v)}): its correlation with the others is undefined")
    r = pearson_rows(np.stack([a, b]), np.stack([human, human]))
    return a * (1.0 if r[0] >= 0 else -1.0), b * (1.0 if r[1] >= 0 else -1.0)


def _count_p(count: int, total: int) -> float:
    """``(count + 1) / (total + 1)``, at most 1: a Monte Carlo p-value that is never 0 (the
    observed data count as one draw; Phipson & Smyth, 2010; sacreBLEU's randomisation test)."""
    return min(1.0, (count + 1) / (total + 1))


def bootstrap_r_difference(a: np.ndarray, b: np.ndarray, human: np.ndarray, resamples: int = 1000,
                           seed: int = SACREBLEU_SEED, confidence: float = 0.95) -> DifferenceTest:
    """Paired bootstrap of the difference in |Pearson r| of metrics ``a`` and ``b`` with ``human``.

    Each metric is first oriented by the sign of its correlation on all the data (a distance
    correlates negatively; the tables report |r|), so ``delta = r(a', h) - r(b', h) = |r_a| -
    |r_b|``. Segments are resampled with replacement (:func:`bootstrap_indices`, the same draw
    for both metrics and the humans: paired; Deutsch et al., 2021, Boot-Inputs), giving
    ``delta*_1 .. delta*_B``. The interval is the percentile interval of the ``delta*``
    (order statistics, as :func:`bootstrap_mean`); the two-sided p-value inverts it: with
    ``m = min(#{delta* <= 0}, #{delta* >= 0})``, ``p = min(1, 2 (m + 1) / (B + 1))``, the level
    at which 0 leaves the interval (Koehn, 2004, reports ``#{delta* <= 0} / B`` one-sided).
    Resamples whose correlation is undefined (a constant resample) are left out; ``resamples``
    in the result counts those used.

    Raises:
        ConfigError: inputs of different lengths, fewer than 3 segments, non-finite or constant
            scores, ``resamples < 1``, or no resample with a defined correlation.
    """
    a, b, h = _finite_vectors(a, b, human, minimum=3)
    a, b = _oriented(a, b, h)
    observed = float(pearson_rows(a, h) - pearson_rows(b, h))
    deltas = []
    for idx in _chunks(bootstrap_indices(len(h), resamples, seed)):
        deltas.append(pearson_rows(a[idx], h[idx]) - pearson_rows(b[idx], h[idx]))
    delta = np.concatenate(deltas)
    delta = delta[np.isfinite(delta)]
    if len(delta) == 0:
        raise ConfigError("no bootstrap resample has a defined correlation")
    low, high = _order_statistic_interval(delta, confidence, resamples)
    m = min(int((delta <= 0).sum()), int((delta >= 0).sum()))
    return DifferenceTest(observed, min(1.0, 2 * _count_p(m, len(delta))), low, high, len(delta))


def bootstrap_mean_difference(a: np.ndarray, b: np.ndarray, resamples: int = 1000, seed: int = SACREBLEU_SEED,
                              confidence: float = 0.95) -> DifferenceTest:
    """Paired bootstrap of the difference of two means over the same items, e.g. the accuracies
    of two metrics on one challenge set (``a``, ``b``: 1 where each metric is right, else 0).

    ``delta = mean(a) - mean(b)``; the items are resampled with replacement
    (:func:`bootstrap_indices`, one draw for both: paired), giving ``delta*_1 .. delta*_B``;
    the interval is their percentile interval (order statistics, as :func:`bootstrap_mean`)
    and the two-sided p-value inverts it as in :func:`bootstrap_r_difference`: with
    ``m = min(#{delta* <= 0}, #{delta* >= 0})``, ``p = min(1, 2 (m + 1) / (B + 1))``.

    Example:
        >>> t = bootstrap_mean_difference(np.array([1, 1, 1, 0]), np.array([1, 1, 1, 0]), resamples=100, seed=0)
        >>> t.difference, t.p_value
        (0.0, 1.0)

    Raises:
        ConfigError: inputs of different lengths, no items, non-finite values, ``resamples < 1``.
    """
    a, b = _finite_vectors(a, b)
    d = a - b
    deltas = np.concatenate([d[idx].mean(axis=1) for idx in _chunks(bootstrap_indices(len(d), resamples, seed))])
    low, high = _order_statistic_interval(deltas, confidence)
    m = min(int((deltas <= 0).sum()), int((deltas >= 0).sum()))
    return DifferenceTest(float(d.mean()), min(1.0, 2 * _count_p(m, len(deltas))), low, high, len(deltas))


def swap_masks(n: int, resamples: int, seed: int) -> np.ndarray:
    """``[resamples, n]`` bool, each entry True with probability 1/2
    (``numpy.random.default_rng(seed).integers(2, ...)``): which segments swap metrics."""
    if resamples < 1:
        raise ConfigError("the permutation test needs at least one permutation")
    return np.random.default_rng(seed).integers(2, size=(resamples, n), dtype=bool)


def permutation_r_difference(a: np.ndarray, b: np.ndarray, human: np.ndarray, resamples: int = 10_000,
                             seed: int = SACREBLEU_SEED, confidence: float = 0.95) -> DifferenceTest:
    """Paired permutation (approximate randomisation) test of the difference in |Pearson r|.

    The procedure of Deutsch et al. (2021, "A Statistical Analysis of Summarization Evaluation
    Metrics using Resampling Methods", Perm-Inputs; their ``nlpstats`` package), for one score
    per segment: orient each metric by the sign of its r with ``human`` (as
    :func:`bootstrap_r_difference`), standardise each metric to mean 0 and standard deviation 1
    over the segments (so that the two are exchangeable: swapping raw scores of metrics on
    different scales would compare scales, not rankings), and take the observed ``delta = r(a,
    h) - r(b, h)``. Under H0 (the metrics correlate equally with the humans) the metric labels
    are exchangeable within a segment: each permutation swaps the two metrics' standardised
    scores in each segment with probability 1/2 (:func:`swap_masks`) and recomputes ``delta*``.
    Two-sided ``p = (#{|delta*| >= |delta|} + 1) / (B + 1)`` (Deutsch et al. count without the
    ``+ 1``; with it the p-value is never 0, as in sacreBLEU's randomisation test).

    The interval is the central ``confidence`` range of ``delta*`` under H0 (order statistics,
    as :func:`bootstrap_mean`): the test rejects at level ``1 - confidence`` about when the
    observed ``delta`` lies outside it. It is not a confidence interval of ``delta`` (use
    :func:`bootstrap_r_difference` for that). Permutations whose correlation is undefined are
    left out, and ``resamples`` in the result counts those used.

    Raises:
        ConfigError: as :func:`bootstrap_r_difference`.
    """
    a, b, h = _finite_vectors(a, b, human, minimum=3)
    a, b = _oriented(a, b, h)
    a, b = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    observed = float(pearson_rows(a, h) - pearson_rows(b, h))
    deltas = []
    for swap in _chunks(swap_masks(len(h), resamples, seed)):
        deltas.append(pearson_rows(np.where(swap, b, a), h) - pearson_rows(np.where(swap, a, b), h))
    delta = np.concatenate(deltas)
    delta = delta[np.isfinite(delta)]
    if len(delta) == 0:
        raise ConfigError("no permutation has a defined correlation")
    low, high = _order_statistic_interval(delta, confidence, resamples, "permutations")
    # |delta*| >= |delta| up to rounding: a permutation that reproduces the data (or its mirror
    # image) must count, whatever the last bit of its arithmetic
    extreme = np.abs(delta) >= abs(observed) - 1e-12
    return DifferenceTest(observed, _count_p(int(extreme.sum()), len(delta)), low, high, len(delta))


def _chunks(rows: np.ndarray, max_values: int = 4_000_000) -> list[np.ndarray]:
    """``rows [B, n]`` in consecutive blocks of at most ``max_values`` entries (bounds memory)."""
    step = max(1, max_values // max(rows.shape[1], 1))
    return [rows[i:i + step] for i in range(0, len(rows), step)]
