"""Learning a combination's weights (alignscore/fit/combination_weights.py): the weights are on the simplex and
find the signal, forward selection keeps runs apart, and the nested estimate fits every fold on
the other pairs only."""

from __future__ import annotations

import numpy as np
import pytest

from alignscore.errors import ConfigError
from alignscore.fit.combination_weights import choose, fit_weights, mean_r, nested, standardisation


def _data(pairs: int = 3, n: int = 150, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per pair: run 0 and run 1 each see the judgments with independent noise (so their mix
    beats both), run 2 is run 0 again (a neighbour), run 3 noise."""
    rng = np.random.default_rng(seed)
    blocks, humans = [], []
    for _ in range(pairs):
        h = rng.normal(size=n)
        a = h + rng.normal(size=n)
        b = 3.0 * (h + rng.normal(size=n)) + 10.0  # another location and scale
        blocks.append(np.stack([a, b, a + 1e-3 * rng.normal(size=n), rng.normal(size=n)]))
        humans.append(h)
    return blocks, humans


def test_weights_sum_to_one_and_the_mix_beats_each_part() -> None:
    blocks, humans = _data()
    w = fit_weights(blocks, humans, [0, 1, 2], [0, 1])
    assert abs(sum(w.weights) - 1) < 1e-12 and all(x >= 0 for x in w.weights)
    assert 0.3 < w.weights[0] < 0.7  # two equally informative runs: near equal weights
    mixed = mean_r(blocks, humans, [0, 1, 2], w.scores)
    assert mixed > max(mean_r(blocks, humans, [0, 1, 2], lambda b, i=i: b[i]) for i in (0, 1)) + 0.02
    m, d = standardisation(blocks, [0, 1, 2])
    assert w.location == (m[0], m[1]) and w.scale == (d[0], d[1])


def test_the_pull_moves_toward_equal_weights() -> None:
    blocks, humans = _data()
    free = fit_weights(blocks, humans, [0, 1, 2], [0, 3])
    pulled = fit_weights(blocks, humans, [0, 1, 2], [0, 3], pull=10.0)
    assert free.weights[0] > 0.9 and abs(pulled.weights[0] - 0.5) < abs(free.weights[0] - 0.5)


def test_forward_selection_keeps_runs_apart() -> None:
    blocks, humans = _data()
    chosen = choose(blocks, humans, [0, 1, 2], 3, apart=lambda a, b: {a, b} != {0, 2})
    assert set(chosen.parts) == {0, 1} or set(chosen.parts) == {1, 2}
    assert 3 not in chosen.parts  # noise adds nothing: selection stops before it


def test_nested_fits_each_fold_on_the_other_pairs() -> None:
    blocks, humans = _data()
    seen: list[list[int]] = []

    def fold_fit(train: list[int]):
        seen.append(train)
        return fit_weights(blocks, humans, train, [0, 1])

    folds = nested(blocks, humans, ["a", "b", "c"], fold_fit, resamples=200)
    assert seen == [[1, 2], [0, 2], [0, 1]]
    iv = folds.intervals
    assert set(iv) == {"combined", "single", "gain"} and iv["gain"].estimate > 0
    assert iv["combined"].low <= iv["combined"].estimate <= iv["combined"].high
    with pytest.raises(ConfigError, match="two or more language pairs"):
        nested(blocks[:1], humans[:1], ["a"], fold_fit)


def test_a_run_that_does_not_vary_has_no_scale() -> None:
    blocks, humans = _data()
    blocks[0][1] = 1.0
    blocks[1][1] = 1.0
    with pytest.raises(ConfigError, match="do not vary"):
        standardisation(blocks, [0, 1])


def test_the_nested_estimate_is_fit_and_tunes_protocol_with_the_same_interval() -> None:
    from alignscore.evaluation.stats import leave_one_pair_out

    blocks, humans = _data()
    folds = nested(blocks, humans, ["a", "b", "c"], lambda train: fit_weights(blocks, humans, train, [0, 1]),
                   resamples=200, seed=3)

    def best_alone(trains):
        return [{"single": int(np.argmax([mean_r(blocks, humans, t, lambda b, i=i: b[i]) for i in range(4)]))}
                for t in trains]

    cv = leave_one_pair_out(["a", "b", "c"], best_alone, lambda k, c: (blocks[k][[c["single"]]], humans[k]), 200, 3)
    assert folds.intervals["single"] == cv.estimates["single"]  # one protocol, one bootstrap: the same interval
    assert folds.single == [f.chosen["single"] for f in cv.folds]
