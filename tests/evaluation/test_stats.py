"""The nested leave-one-language-pair-out estimate (``leave_one_pair_out``): each pair held out in
turn, its intervals a paired bootstrap over every held-out pair's segments (checked against a
plain loop over the same draws), and ``alignscore fit`` and ``alignscore tune`` reporting the same
interval for the same run on the same data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import alignscore
from alignscore.evaluation.stats import leave_one_pair_out
from alignscore.evaluation.wmt import load_daseg
from alignscore.tune import Schedule, prepare, search
from alignscore.tune.space import load_space
from alignscore.cli.options import FLAGS
from alignscore.config.compile import sources_of
from helpers import write_daseg

PAIRS = ("cs-en", "de-en", "fi-en")


def synthetic(seed: int = 0, n: tuple[int, ...] = (12, 15, 9)):
    rng = np.random.default_rng(seed)
    human = [rng.normal(size=k) for k in n]
    metrics = {"a": [h + rng.normal(size=len(h)) for h in human], "b": [h + 2 * rng.normal(size=len(h)) for h in human],
               "c": [rng.normal(size=len(h)) for h in human]}
    return human, metrics


def test_each_pair_is_held_out_once_and_chosen_on_the_others() -> None:
    human, metrics = synthetic()
    seen = []

    def choose(trains):
        seen.extend(trains)
        return [{"first": "a", "other": "c"} for _ in trains]

    cv = leave_one_pair_out(PAIRS, choose, lambda k, c: (np.stack([metrics[m][k] for m in c.values()]), human[k]),
                            resamples=50)
    assert seen == [[1, 2], [0, 2], [0, 1]]
    assert [f.held_out for f in cv.folds] == list(PAIRS)
    for k, f in enumerate(cv.folds):
        assert f.abs_r["first"] == pytest.approx(abs(np.corrcoef(metrics["a"][k], human[k])[0, 1]))
    assert leave_one_pair_out(PAIRS[:1], lambda trains: [], lambda k, c: None).folds == ()


def test_intervals_are_a_paired_bootstrap_over_every_held_out_pair() -> None:
    human, metrics = synthetic(1)
    names = ("a", "b", "c")
    cv = leave_one_pair_out(PAIRS, lambda trains: [dict(zip(names, names))] * len(trains),
                            lambda k, c: (np.stack([metrics[m][k] for m in c.values()]), human[k]),
                            resamples=300, seed=7)
    rng = np.random.default_rng(7)  # one generator, one draw per held-out pair in order, shared by the runs
    draws = [rng.integers(0, len(h), size=(300, len(h))) for h in human]
    boot = {m: np.mean([[abs(np.corrcoef(metrics[m][k][d], human[k][d])[0, 1]) for d in draws[k]]
                        for k in range(3)], axis=0) for m in names}
    for m in names:
        want = np.mean([abs(np.corrcoef(metrics[m][k], human[k])[0, 1]) for k in range(3)])
        assert cv.estimates[m].estimate == pytest.approx(want)
        assert (cv.estimates[m].low, cv.estimates[m].high) == pytest.approx(tuple(np.quantile(boot[m], [.025, .975])))
    for m in ("b", "c"):
        gain = cv.gains[m]
        assert gain.estimate == pytest.approx(cv.estimates["a"].estimate - cv.estimates[m].estimate)
        assert (gain.low, gain.high) == pytest.approx(tuple(np.quantile(boot["a"] - boot[m], [.025, .975])))
    assert set(cv.gains) == {"b", "c"}


@pytest.mark.slow
def test_fit_and_tune_report_the_same_interval_for_the_same_run(tiny_bert_dir: str, tmp_path: Path) -> None:
    """The start of a fit and the only run of a search are one composition: on the same data, with
    the same resamples and seed, their held-out estimate and interval agree (up to the float
    rounding of the two scoring paths)."""
    data = write_daseg(tmp_path, PAIRS, 30)
    (tmp_path / "start.toml").write_text(f'model = "{tiny_bert_dir}"\nlayer = 2\n', encoding="utf-8")
    fitted = alignscore.fit(data, start=tmp_path / "start.toml", steps=1, seed=5, bootstrap=300)
    (tmp_path / "space.toml").write_text("layer = [2]\n", encoding="utf-8")
    space = load_space(tmp_path / "space.toml")
    entries, scorers = prepare(space.candidates(sources_of({"model": tiny_bert_dir}, FLAGS)), {})
    tuned = search(entries, scorers, load_daseg(data), Schedule((1.0,)), resamples=300, seed=5)
    start, selected = fitted.intervals["start"], tuned.estimates["selected"]
    assert [f.held_out for f in fitted.estimate.folds] == [f.held_out for f in tuned.folds] == list(PAIRS)
    for f, t in zip(fitted.estimate.folds, tuned.folds):
        assert f.abs_r["start"] == pytest.approx(t.abs_r["selected"], abs=1e-6)
    assert (start.estimate, start.low, start.high) == pytest.approx((selected.estimate, selected.low, selected.high),
                                                                    abs=1e-6)
