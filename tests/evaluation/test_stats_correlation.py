"""Meta-evaluation statistics: correlations, Williams' test, bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from alignscore.errors import ConfigError
from alignscore.evaluation.stats import (abs_pearson, bootstrap_ci, bootstrap_indices, correlation, not_beaten,
                                         pearson_rows, williams_matrix, williams_test)


def _correlated(n: int, rho: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    return x, rho * x + math.sqrt(1 - rho * rho) * rng.standard_normal(n)


# -- correlations ------------------------------------------------------------------------------
def test_correlations_agree_with_their_definitions():
    x, y = _correlated(200, 0.5, 0)
    r, p = correlation(x, y, "pearson")
    assert r == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    # p-value of r under H0: t = r sqrt((n-2)/(1-r^2)) with n-2 degrees of freedom, two-sided
    t = r * math.sqrt(198 / (1 - r * r))
    assert p == pytest.approx(2 * sps.t.sf(abs(t), 198), rel=1e-6)
    rho, _ = correlation(x, y, "spearman")
    assert rho == pytest.approx(np.corrcoef(sps.rankdata(x), sps.rankdata(y))[0, 1], abs=1e-12)
    tau, _ = correlation(x, y, "kendall")
    assert tau == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)


def test_correlation_of_a_constant_is_nan_and_unknown_method_is_an_error():
    assert all(math.isnan(v) for v in correlation(np.ones(10), np.arange(10.0)))
    with pytest.raises(ConfigError):
        correlation(np.arange(5.0), np.arange(5.0), "cosine")


def test_pearson_rows_is_row_wise_pearson():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 50)), rng.standard_normal((4, 50))
    expected = [np.corrcoef(a, b)[0, 1] for a, b in zip(x, y)]
    np.testing.assert_allclose(pearson_rows(x, y), expected, atol=1e-12)


# -- Williams' test ----------------------------------------------------------------------------
def test_williams_matches_howells_worked_example():
    # Howell, Statistical Methods for Psychology (6th ed., p. 262), as reproduced in B. Weaver's
    # Williams1959.sps: r12 = .80, r13 = .72, r23 = .89, n = 26 -> t = 1.361, df = 23, p = .187
    # (two-sided).
    t, p_one = williams_test(0.80, 0.72, 0.89, 26)
    assert round(float(t), 3) == 1.361
    assert round(float(2 * min(p_one, 1 - p_one)), 3) == 0.187


def test_williams_matches_an_independent_computation_from_the_correlation_matrix():
    # Williams' T2 written with the determinant |R| of the full 3x3 correlation matrix (Steiger,
    # 1980, eq. 7), computed by numpy from raw data instead of the expanded K of the implementation.
    rng = np.random.default_rng(7)
    n = 120
    human = rng.standard_normal(n)
    m1 = human + 0.8 * rng.standard_normal(n)
    m2 = 0.5 * m1 + human + 1.5 * rng.standard_normal(n)
    R = np.corrcoef(np.stack([human, m1, m2]))
    r12, r13, r23 = R[0, 1], R[0, 2], R[1, 2]
    det = np.linalg.det(R)
    rbar = (r12 + r13) / 2
    t_ref = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) /
                                    (2 * (n - 1) / (n - 3) * det + rbar ** 2 * (1 - r23) ** 3))
    t, p = williams_test(r12, r13, r23, n)
    assert float(t) == pytest.approx(t_ref, rel=1e-10)
    assert float(p) == pytest.approx(sps.t.sf(t_ref, n - 3), rel=1e-10)
    # and the matrix form says the same, in both directions
    P = williams_matrix(np.stack([m1, m2]), human)
    assert P[0, 1] == pytest.approx(float(p), rel=1e-9)
    assert P[1, 0] == pytest.approx(1 - float(p), rel=1e-9)


def test_williams_matrix_orients_metrics_and_marks_the_unbeaten():
    rng = np.random.default_rng(3)
    n = 560
    human = rng.standard_normal(n)
    good = human + 0.5 * rng.standard_normal(n)
    bad = human + 3.0 * rng.standard_normal(n)
    flipped = -good  # a distance: negatively correlated, as good as `good` in absolute terms
    P = williams_matrix(np.stack([good, bad, flipped]), human)
    assert np.all(np.diag(P) == 1)
    assert P[0, 1] < 1e-6  # good beats bad
    assert P[0, 2] == pytest.approx(0.5)  # good vs its mirror image: t = 0
    flags = not_beaten(np.stack([good, bad, flipped]), human)
    assert flags.tolist() == [True, False, True]
    # two identical metrics: neither beats the other
    assert not_beaten(np.stack([good, good]), human).tolist() == [True, True]


def test_williams_needs_four_segments():
    with pytest.raises(ConfigError):
        williams_test(0.5, 0.4, 0.3, 3)


# -- bootstrap ---------------------------------------------------------------------------------
def test_bootstrap_of_an_exactly_linear_relation_is_degenerate():
    x = np.arange(30.0)
    ci = bootstrap_ci(abs_pearson, x, 2 * x + 1, resamples=500, seed=0)
    assert (ci.estimate, ci.low, ci.high) == pytest.approx((1.0, 1.0, 1.0), abs=1e-12)


def test_bootstrap_of_the_mean_matches_its_known_sampling_distribution():
    # Known case: the bootstrap distribution of a sample mean has mean x_bar and variance
    # s^2 / n with the plug-in s^2 = mean((x - x_bar)^2); for n = 400 it is close to normal, so the
    # 95% percentile interval is x_bar +- 1.96 s / sqrt(n) (to within Monte Carlo error).
    rng = np.random.default_rng(11)
    x = rng.standard_normal(400)
    ci = bootstrap_ci(lambda a: a.mean(axis=-1), x, resamples=20000, seed=5)
    half = 1.959964 * x.std() / math.sqrt(len(x))
    assert ci.estimate == pytest.approx(x.mean(), abs=1e-12)
    assert ci.low == pytest.approx(x.mean() - half, abs=0.03 * half)
    assert ci.high == pytest.approx(x.mean() + half, abs=0.03 * half)


@pytest.mark.slow  # many resamples: out of the edit loop's tier, in CI's
def test_bootstrap_of_pearson_is_close_to_the_fisher_interval():
    x, y = _correlated(2000, 0.6, 2)
    r = np.corrcoef(x, y)[0, 1]
    ci = bootstrap_ci(abs_pearson, x, y, resamples=4000, seed=1)
    z, se = math.atanh(r), 1 / math.sqrt(2000 - 3)
    assert ci.low == pytest.approx(math.tanh(z - 1.959964 * se), abs=0.006)
    assert ci.high == pytest.approx(math.tanh(z + 1.959964 * se), abs=0.006)


def test_bootstrap_is_seeded_and_paired():
    x, y = _correlated(100, 0.3, 4)
    a = bootstrap_ci(abs_pearson, x, y, resamples=300, seed=9)
    b = bootstrap_ci(abs_pearson, x, y, resamples=300, seed=9)
    c = bootstrap_ci(abs_pearson, x, y, resamples=300, seed=10)
    assert a == b and a != c
    idx = bootstrap_indices(100, 300, 9)
    assert bootstrap_ci(abs_pearson, x, y, indices=idx) == a  # one draw shared by several metrics
    with pytest.raises(ConfigError):
        bootstrap_ci(abs_pearson, x, y, confidence=1.5)
