"""Learning the LM term's fixed scale and weight (alignscore.fit.lm) from training data."""

from __future__ import annotations

import numpy as np
import pytest

from alignscore.errors import ConfigError
from alignscore.fit.lm import WEIGHT_GRID, learn_lm_weight, lm_scale_of


def test_the_scale_is_the_pooled_training_candidates_mean_and_deviation() -> None:
    a, b = np.array([-5.0, -3.0, -4.0]), np.array([-2.0, -6.0])
    loc, scale = lm_scale_of([a, b])
    pooled = np.concatenate([a, b])
    assert (loc, scale) == pytest.approx((pooled.mean(), pooled.std()))
    with pytest.raises(ConfigError, match="at least two finite, different"):
        lm_scale_of([np.array([-3.0, -3.0])])


def test_the_weight_recovers_a_mix_and_prefers_the_smallest_of_ties() -> None:
    rng = np.random.default_rng(0)
    aligned = [rng.normal(0.5, 0.05, 200) for _ in range(3)]
    terms = [rng.normal(0, 1, 200) for _ in range(3)]
    human = [x + 0.04 * t + rng.normal(0, 0.01, 200) for x, t in zip(aligned, terms)]
    w, tried = learn_lm_weight(aligned, terms, human)
    assert abs(w - 0.04) <= 0.01 and tried[w] == max(tried.values()) and set(tried) == set(WEIGHT_GRID)
    # a constant term changes no |r|: every weight ties, the smallest (0) is kept
    assert learn_lm_weight(aligned, [np.ones(200)] * 3, human)[0] == 0.0
    with pytest.raises(ConfigError, match="the same language pairs"):
        learn_lm_weight(aligned, terms[:2], human)
