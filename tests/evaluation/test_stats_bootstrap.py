"""Resampling statistics around a score: sacreBLEU-style bootstrap interval of a corpus mean, and
paired bootstrap / permutation tests of the difference in |Pearson r| of two metrics, against
closed forms, hand-checkable cases, plain loops over the same draws and sacreBLEU itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import needs
from scipy import stats as sps

from alignscore.errors import ConfigError
from alignscore.evaluation.stats import (SACREBLEU_SEED, bootstrap_indices, bootstrap_mean, bootstrap_r_difference,
                                         permutation_r_difference, swap_masks, williams_test)


def metrics_and_humans(n: int, noise_a: float, noise_b: float, seed: int):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(n)
    return h + noise_a * rng.standard_normal(n), h + noise_b * rng.standard_normal(n), h


# -- the interval of a corpus mean ----------------------------------------------------------------
def test_mean_interval_equals_a_plain_loop_over_the_same_draws():
    x = np.random.default_rng(1).gamma(2.0, size=57)
    ci = bootstrap_mean(x, resamples=400, seed=3)
    idx = np.random.default_rng(3).choice(len(x), size=(400, len(x)), replace=True)  # sacreBLEU's draw
    means = sorted(sum(x[i] for i in row) / len(x) for row in idx)
    assert ci.estimate == pytest.approx(x.mean(), abs=1e-12)
    assert ci.mean == pytest.approx(sum(means) / 400, abs=1e-12)
    assert (ci.low, ci.high) == pytest.approx((means[400 // 40], means[400 - 400 // 40 - 1]), abs=1e-12)
    assert ci.half_width == pytest.approx((means[389] - means[10]) / 2, abs=1e-12)
    assert (ci.resamples, ci.seed) == (400, 3)


def test_mean_interval_hand_checkable_cases():
    const = bootstrap_mean(np.full(10, 0.7))
    assert (const.estimate, const.mean, const.low, const.high, const.half_width) == pytest.approx((0.7,) * 4 + (0,))
    one = bootstrap_mean(np.array([0.25]))
    assert (one.low, one.high) == (0.25, 0.25)
    # two segments: a resample's mean is 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4, so the
    # 25th smallest of 1000 is 0 and the 25th largest 1: the interval is [0, 1], half-width 1/2
    two = bootstrap_mean(np.array([0.0, 1.0]))
    assert (two.low, two.high, two.half_width) == (0.0, 1.0, 0.5)
    assert two.mean == pytest.approx(0.5, abs=0.03)


def test_mean_interval_matches_the_sampling_distribution_of_a_mean():
    x = np.random.default_rng(2).standard_normal(500)
    ci = bootstrap_mean(x, resamples=20_000, seed=4)
    half = 1.959964 * x.std() / math.sqrt(len(x))  # plug-in standard error; near normal for n = 500
    assert ci.half_width == pytest.approx(half, rel=0.03)
    assert ci.mean == pytest.approx(x.mean(), abs=0.05 * half)


def test_mean_interval_equals_sacrebleus_own_resampling_and_interval(monkeypatch):
    sacrebleu = needs("sacrebleu")
    from sacrebleu.significance import _bootstrap_resample, estimate_ci

    class MeanScore:  # a corpus score that is the mean of segment scores, as sacreBLEU metrics compute one
        def __init__(self, score: float) -> None:
            self.score = score

    class MeanMetric:
        @staticmethod
        def _compute_score_from_stats(stats: np.ndarray) -> MeanScore:
            return MeanScore(float(stats[0] / stats[1]))

    monkeypatch.delenv("SACREBLEU_SEED", raising=False)  # sacreBLEU's default seed, 12345
    x = np.random.default_rng(5).uniform(0.2, 0.9, size=300)
    seed, scores = _bootstrap_resample([[v, 1.0] for v in x], MeanMetric(), 1000)
    mean, half = estimate_ci(np.array([s.score for s in scores]))
    ours = bootstrap_mean(x)
    assert seed == str(SACREBLEU_SEED) and sacrebleu.__version__
    # sacreBLEU sums its statistics in float32: agreement to float32 rounding
    assert ours.mean == pytest.approx(mean, abs=1e-6)
    assert ours.half_width == pytest.approx(half, abs=1e-6)


def test_mean_interval_rejects_bad_input():
    for bad in ([], [1.0, math.nan], [[1.0, 2.0]], [math.inf]):
        with pytest.raises(ConfigError):
            bootstrap_mean(np.array(bad, dtype=float))
    with pytest.raises(ConfigError, match="resample"):
        bootstrap_mean(np.ones(3), resamples=0)
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_mean(np.ones(3), confidence=1.0)


# -- the difference in |r| ------------------------------------------------------------------------------
def _r(x: np.ndarray, y: np.ndarray) -> float:
    return float(sps.pearsonr(x, y).statistic)


def test_bootstrap_difference_equals_a_plain_loop_over_the_same_draws():
    a, b, h = metrics_and_humans(40, 0.8, 1.2, 6)
    b = -b  # a distance: oriented before comparing, so |r| counts
    test = bootstrap_r_difference(a, b, h, resamples=300, seed=7)
    deltas = []
    for row in bootstrap_indices(40, 300, 7):
        deltas.append(_r(a[row], h[row]) - _r(-b[row], h[row]))
    deltas = np.sort(deltas)
    assert test.difference == pytest.approx(abs(_r(a, h)) - abs(_r(b, h)), abs=1e-12)
    assert (test.low, test.high) == pytest.approx((deltas[300 // 40], deltas[300 - 300 // 40 - 1]), abs=1e-12)
    m = min((deltas <= 0).sum(), (deltas >= 0).sum())
    assert test.p_value == pytest.approx(min(1.0, 2 * (m + 1) / 301), abs=1e-15)
    assert test.resamples == 300


def test_permutation_difference_equals_a_plain_loop_over_the_same_swaps():
    a, b, h = metrics_and_humans(30, 0.9, 1.0, 8)
    a = 3 * a + 5  # another scale: the test standardises
    test = permutation_r_difference(a, b, h, resamples=500, seed=9)
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    observed = _r(za, h) - _r(zb, h)
    count, deltas = 0, []
    for swap in swap_masks(30, 500, 9):
        pa = [zb[i] if swap[i] else za[i] for i in range(30)]
        pb = [za[i] if swap[i] else zb[i] for i in range(30)]
        d = _r(np.array(pa), h) - _r(np.array(pb), h)
        deltas.append(d)
        count += abs(d) >= abs(observed) - 1e-12
    deltas = np.sort(deltas)
    assert test.difference == pytest.approx(observed, abs=1e-12)
    assert test.p_value == pytest.approx((count + 1) / 501, abs=1e-15)
    assert (test.low, test.high) == pytest.approx((deltas[12], deltas[487]), abs=1e-12)


def test_permutation_enumerates_exactly_on_a_tiny_case():
    """Four segments: 16 swap patterns, each as likely. With many random swaps the p-value is the
    exact share of patterns at least as extreme (to Monte Carlo error)."""
    h = np.array([1.0, 2.0, 3.0, 4.0])
    a = np.array([1.0, 2.0, 3.0, 4.5])
    b = np.array([2.0, 1.0, 4.0, 3.0])
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    observed = _r(za, h) - _r(zb, h)
    exact = 0
    for pattern in range(16):
        swap = np.array([(pattern >> i) & 1 for i in range(4)], dtype=bool)
        exact += abs(_r(np.where(swap, zb, za), h) - _r(np.where(swap, za, zb), h)) >= abs(observed) - 1e-12
    test = permutation_r_difference(a, b, h, resamples=40_000, seed=1)
    assert test.p_value == pytest.approx(exact / 16, abs=0.01)
    assert exact / 16 == 0.125  # only the data and its mirror image (all swapped) are as extreme


def test_identical_or_mirrored_metrics_do_not_differ():
    a, _, h = metrics_and_humans(50, 0.7, 0.7, 10)
    for other in (a, -a, 2 * a - 1):
        boot, perm = bootstrap_r_difference(a, other, h), permutation_r_difference(a, other, h, resamples=2000)
        assert boot.difference == pytest.approx(0.0, abs=1e-12) and boot.p_value == 1.0
        assert (boot.low, boot.high) == pytest.approx((0.0, 0.0), abs=1e-12)
        assert perm.difference == pytest.approx(0.0, abs=1e-12) and perm.p_value == 1.0


def test_a_perfect_metric_beats_a_noisy_one():
    a, b, h = metrics_and_humans(200, 0.0, 1.5, 11)
    boot, perm = bootstrap_r_difference(a, b, h), permutation_r_difference(a, b, h, resamples=5000)
    assert boot.difference == pytest.approx(1 - _r(b, h), abs=1e-12) and boot.low > 0
    assert boot.p_value == pytest.approx(2 / 1001)  # no resample has delta <= 0: the smallest p
    assert perm.p_value == pytest.approx(1 / 5001) and not perm.low <= boot.difference <= perm.high


def test_agreement_with_williams_on_a_real_difference():
    a, b, h = metrics_and_humans(300, 0.9, 1.1, 12)
    r = np.corrcoef([h, a, b])
    _, one_sided = williams_test(r[0, 1], r[0, 2], r[1, 2], 300)
    perm = permutation_r_difference(a, b, h)
    boot = bootstrap_r_difference(a, b, h, resamples=4000)
    assert 0.01 < 2 * one_sided < 0.05  # a clear but not overwhelming difference (0.024)
    assert perm.p_value == pytest.approx(2 * one_sided, rel=0.3)
    assert boot.p_value == pytest.approx(2 * one_sided, rel=0.3)


def test_false_positive_rate_under_the_null():
    """Exchangeable metrics (same noise): at level 0.05 each test rejects about 5% of data sets."""
    rejected = np.zeros(2)
    trials = 200
    for t in range(trials):
        a, b, h = metrics_and_humans(60, 1.0, 1.0, 1000 + t)
        rejected += [permutation_r_difference(a, b, h, resamples=400, seed=t).p_value < 0.05,
                     bootstrap_r_difference(a, b, h, resamples=400, seed=t).p_value < 0.05]
    rate = rejected / trials
    assert rate[0] == pytest.approx(0.05, abs=0.04), rate  # binomial sd 0.015
    assert rate[1] == pytest.approx(0.05, abs=0.05), rate  # the percentile bootstrap is a little liberal


def test_tests_are_seeded():
    a, b, h = metrics_and_humans(40, 1.0, 1.1, 13)
    assert permutation_r_difference(a, b, h, seed=3) == permutation_r_difference(a, b, h, seed=3)
    assert bootstrap_r_difference(a, b, h, seed=3) == bootstrap_r_difference(a, b, h, seed=3)
    assert bootstrap_r_difference(a, b, h, seed=3) != bootstrap_r_difference(a, b, h, seed=4)


@pytest.mark.parametrize("test", [bootstrap_r_difference, permutation_r_difference])
def test_difference_tests_reject_bad_input(test):
    a, b, h = metrics_and_humans(20, 1.0, 1.0, 14)
    with pytest.raises(ConfigError, match="constant"):
        test(np.ones(20), b, h)
    with pytest.raises(ConfigError, match="constant"):
        test(a, b, np.full(20, 3.0))
    with pytest.raises(ConfigError, match="finite"):
        test(np.where(np.arange(20) == 4, np.nan, a), b, h)
    with pytest.raises(ConfigError, match="1-d arrays of one length"):
        test(a[:10], b, h)
    with pytest.raises(ConfigError, match="at least 3"):
        test(a[:2], b[:2], h[:2])
    with pytest.raises(ConfigError):
        test(a, b, h, resamples=0)
    what = "permutations" if test is permutation_r_difference else "resamples"
    with pytest.raises(ConfigError, match=rf"95% percentile interval needs at least 40 {what}, not 39$") as caught:
        test(a, b, h, resamples=39)
    assert caught.value.options == (what,)


def test_constant_resamples_are_left_out_never_nan():
    h = np.array([0.0, 0.0, 0.0, 1.0])  # most resamples of four segments draw only zeros
    a, b = np.array([0.1, 0.3, 0.2, 0.9]), np.array([0.5, 0.1, 0.2, 0.8])
    boot = bootstrap_r_difference(a, b, h, resamples=500)
    assert 0 < boot.resamples < 500
    with pytest.raises(ConfigError, match=r"needs at least 40 resamples, not \d+ with a defined correlation "
                                          r"\(of 60 drawn\)"):
        bootstrap_r_difference(a, b, h, resamples=60)
    assert all(math.isfinite(v) for v in (boot.difference, boot.p_value, boot.low, boot.high))
