"""Learning a combination's weights (DESIGN.md, "Combinations"): each part's standardisation
(location and scale: the mean and standard deviation of its scores over the training segments)
and its weight (``w >= 0``, summing to 1: a softmax), by gradient ascent on the mean Pearson r
over language pairs (the fit's objective), with an optional L2 pull toward equal weights; and the
nested leave-one-language-pair-out estimate, in which every fold chooses and fits on the other
pairs only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from ..errors import ConfigError
from ..evaluation.stats import Interval, leave_one_pair_out

#: Adam's steps and learning rate for the weights (a few parts: the objective is smooth and small)
STEPS, LR = 300, 0.05


@dataclass(frozen=True)
class Weights:
    """A fitted combination over chosen parts: ``parts`` (indices into the scored runs), their
    ``weights`` (summing to 1), ``location`` and ``scale``."""

    parts: tuple[int, ...]
    weights: tuple[float, ...]
    location: tuple[float, ...]
    scale: tuple[float, ...]

    def scores(self, block: np.ndarray) -> np.ndarray:
        """The combined scores of ``block [runs, n]`` (every run's scores of n segments)."""
        out = np.zeros(block.shape[1])
        for i, w, m, d in zip(self.parts, self.weights, self.location, self.scale):
            out += w * ((block[i] - m) / d)
        return out


@dataclass
class Folds:
    """The nested estimate: per held-out pair, what its fold chose and the held-out |r| of the
    combination and of the best single run chosen on the same training pairs; per compared
    metric the mean over folds with a 95% bootstrap interval (``gain``: combination minus the
    single run, paired)."""

    names: list[str]
    chosen: list[Weights] = field(default_factory=list)
    single: list[int] = field(default_factory=list)
    r_combined: list[float] = field(default_factory=list)
    r_single: list[float] = field(default_factory=list)
    intervals: dict[str, Interval] = field(default_factory=dict)


def standardisation(blocks: Sequence[np.ndarray], which: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each run's location and scale: the mean and standard deviation (ddof 0) of its scores over
    every segment of the pairs ``which``.

    Raises
    ------
    ConfigError
        A run whose scores there do not vary (no scale to divide by).
    """
    pooled = np.concatenate([blocks[k] for k in which], axis=1)
    m, d = pooled.mean(axis=1), pooled.std(axis=1)
    if not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise ConfigError(f"run {int(np.argmin(d))}: its scores do not vary on the training data: no scale")
    return m, d


def mean_r(blocks: Sequence[np.ndarray], humans: Sequence[np.ndarray], which: Sequence[int],
           scores: Callable[[np.ndarray], np.ndarray]) -> float:
    """The mean over the pairs ``which`` of Pearson r between ``scores(block)`` and the human scores."""
    return float(np.mean([np.corrcoef(scores(blocks[k]), humans[k])[0, 1] for k in which]))


def fit_weights(blocks: Sequence[np.ndarray], humans: Sequence[np.ndarray], which: Sequence[int],
                parts: Sequence[int], pull: float = 0.0) -> Weights:
    """The weights of ``parts`` fitted on the pairs ``which``: standardised on them, then Adam on
    ``-mean r + pull * |w - 1/K|^2`` from equal weights; the step with the best objective is kept.

    Parameters
    ----------
    blocks : per pair ``[runs, n]`` scores.
    humans : per pair ``[n]`` human scores.
    which : the training pairs.
    parts : the runs combined.
    pull : the L2 pull toward equal weights (0: none).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> human = rng.normal(size=200)
    >>> block = np.stack([human + rng.normal(size=200), rng.normal(size=200)])  # a signal, and noise
    >>> w = fit_weights([block], [human], [0], [0, 1])
    >>> w.weights[0] > 0.9, abs(sum(w.weights) - 1) < 1e-12
    (True, True)
    """
    m_all, d_all = standardisation(blocks, which)
    parts = list(parts)
    m, d = m_all[parts], d_all[parts]
    if len(parts) == 1:
        return Weights(tuple(parts), (1.0,), (float(m[0]),), (float(d[0]),))
    z = [torch.as_tensor((blocks[k][parts] - m[:, None]) / d[:, None]) for k in which]
    h = [torch.as_tensor(humans[k] - humans[k].mean()) for k in which]
    logits = torch.zeros(len(parts), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([logits], lr=LR)
    equal = torch.full((len(parts),), 1.0 / len(parts), dtype=torch.float64)
    best, best_w = -math.inf, equal
    for _ in range(STEPS + 1):
        w = torch.softmax(logits, 0)
        rs = []
        for zk, hk in zip(z, h):
            s = w @ zk
            s = s - s.mean()
            rs.append((s * hk).sum() / (s.norm() * hk.norm()).clamp_min(1e-300))
        objective = torch.stack(rs).mean() - pull * ((w - equal) ** 2).sum()
        value = float(objective.detach())
        if value > best:
            best, best_w = value, w.detach().clone()
        opt.zero_grad()
        (-objective).backward()
        opt.step()
    weights = best_w.numpy()
    weights = weights / weights.sum()
    return Weights(tuple(parts), tuple(float(x) for x in weights), tuple(float(x) for x in m),
                   tuple(float(x) for x in d))


def choose(blocks: Sequence[np.ndarray], humans: Sequence[np.ndarray], which: Sequence[int], most: int,
           pull: float = 0.0, apart: Callable[[int, int], bool] = lambda a, b: True) -> Weights:
    """At most ``most`` runs chosen by forward selection on the pairs ``which``: the best run
    alone, then each time the run whose fitted combination has the best mean r, among those
    ``apart`` from every run chosen (not a neighbour of one); stops when none adds more than
    1e-4 to the mean r."""
    runs = range(len(blocks[0]))
    alone = [mean_r(blocks, humans, which, lambda b, i=i: b[i]) for i in runs]
    chosen = fit_weights(blocks, humans, which, [int(np.argmax(alone))], pull)
    value = max(alone)
    while len(chosen.parts) < most:
        tried = [(fit_weights(blocks, humans, which, [*chosen.parts, i], pull), i) for i in runs
                 if i not in chosen.parts and all(apart(i, j) for j in chosen.parts)]
        scored = [(mean_r(blocks, humans, which, w.scores), w) for w, _ in tried]
        if not scored:
            break
        best_value, best = max(scored, key=lambda t: t[0])
        if best_value <= value + 1e-4:
            break
        chosen, value = best, best_value
    return chosen


def nested(blocks: Sequence[np.ndarray], humans: Sequence[np.ndarray], names: Sequence[str],
           fold_fit: Callable[[list[int]], Weights], resamples: int = 1000, seed: int = 0) -> Folds:
    """Leave one language pair out (:func:`~alignscore.evaluation.stats.leave_one_pair_out`, the
    protocol and paired bootstrap of ``fit`` and ``tune``): ``fold_fit(training pairs)`` chooses
    and fits the combination, the best single run is chosen on the same pairs, both are scored on
    the pair left out.

    Returns
    -------
    Folds
        ``intervals``: ``combined``, ``single`` and their ``gain``, each the mean held-out |r| over
        the folds with a 95% interval (the same resamples as every other run's estimate with this
        ``seed``: paired).
    """
    if len(blocks) < 2:
        raise ConfigError("a nested estimate needs two or more language pairs")
    runs = range(len(blocks[0]))

    def choose_folds(trains: list[list[int]]) -> list[dict[str, Weights]]:
        out = []
        for train in trains:
            single = int(np.argmax([mean_r(blocks, humans, train, lambda b, i=i: b[i]) for i in runs]))
            out.append({"combined": fold_fit(train), "single": Weights((single,), (1.0,), (0.0,), (1.0,))})
        return out

    def score(k: int, chosen: Mapping[str, Weights]) -> tuple[np.ndarray, np.ndarray]:
        return np.stack([w.scores(blocks[k]) for w in chosen.values()]), humans[k]

    cv = leave_one_pair_out(list(names), choose_folds, score, resamples, seed)
    f = cv.folds
    return Folds([x.held_out for x in f], [x.chosen["combined"] for x in f],
                 [x.chosen["single"].parts[0] for x in f], [x.abs_r["combined"] for x in f],
                 [x.abs_r["single"] for x in f],
                 {**cv.estimates, "gain": cv.gains["single"]})


__all__ = ["Folds", "Weights", "choose", "fit_weights", "mean_r", "nested", "standardisation"]
