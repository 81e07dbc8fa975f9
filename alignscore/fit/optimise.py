"""Gradient ascent on the mean Pearson r over language pairs, with early stopping on an inner
split of the segments (seeded), and the nested leave-one-language-pair-out estimate."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from ..evaluation.stats import bootstrap_indices, pearson_rows
from .features import Features, PairFeatures
from .goal import Goal
from .model import Model, Values, mean_r, pair_scores, pearson, plain, scores_of

#: the share of each language pair's segments an inner fold holds out for early stopping
INNER_SHARE = 0.25


@dataclass
class Optimisation:
    """How one fit runs: Adam's learning rate ``lr``, at most ``steps`` steps, stop after
    ``patience`` steps without a better inner score, the penalty ``reg``, the ``seed`` of the
    inner split."""

    lr: float = 0.1
    steps: int = 200
    patience: int = 25
    reg: float = 1e-3
    seed: int = 0


@dataclass
class Fitted:
    """One fit's result: the ``values``, the ``steps`` taken, the inner objective (the mean r on
    the held-out segments, plus W times the challenge accuracy in ``correlation + W *
    accuracy[C]``) at the start and at the values chosen; with a challenge objective, the
    accuracy at both and whether the start met its constraint."""

    values: Values
    steps: int
    inner_start: float
    inner_best: float
    start_meets: bool = True
    accuracy_start: float | None = None
    accuracy_best: float | None = None


def inner_split(pairs: Sequence[PairFeatures], seed: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Each language pair's segments split at random (``seed``) into training rows and an inner
    fold of :data:`INNER_SHARE` (the rows early stopping reads)."""
    rng = np.random.default_rng(seed)
    train, held = [], []
    for pf in pairs:
        order = rng.permutation(len(pf))
        k = max(int(round(INNER_SHARE * len(pf))), 4)
        held.append(torch.as_tensor(np.sort(order[:k])))
        train.append(torch.as_tensor(np.sort(order[k:])))
    return train, held


def fit_values(features: Features, pairs: Sequence[int], start: Values, learn: Sequence[str], plan: Optimisation,
               deadline: float, step_done: Callable[[], None] = lambda: None, exact: Values | None = None,
               goal: Goal | None = None) -> Fitted:
    """Learn ``learn`` on the language pairs ``pairs`` (indices into ``features.pairs``) from
    ``start``: Adam on ``-mean r + penalty`` over the training segments; the values kept are
    those of the step with the best mean r on the inner fold, where ``exact`` (the starting
    composition itself, when the optimisation starts elsewhere) and ``start`` compete too, so a
    fit never does worse there than where it began. Stops after ``plan.patience`` steps without
    a better inner r than the path's own best so far, or at ``deadline``
    (``time.monotonic()``). Each step scores every segment once: the inner fold's r of the
    values before the step, and the gradient of the training segments'.

    With a challenge ``goal``, the gradient adds its surrogate's term (:meth:`Goal.loss`) and
    the choice reads the true accuracy: the inner r plus W times it; under ``accuracy[C] >= X``
    only values that meet it are kept, the start kept when none does (beneath every one that
    does, a value that misses it ranks by its accuracy for the patience)."""
    chosen = [features.pairs[i] for i in pairs]
    train, held = inner_split(chosen, plan.seed)
    model = Model(start, learn, plan.reg)
    opt = torch.optim.Adam(model.parameters(), lr=plan.lr)
    best_r, best, first, path_r, since, steps = -math.inf, start, -math.inf, -math.inf, 0, 0
    acc_first = acc_best = None
    best_ok = True
    meets = (lambda acc: True) if goal is None else goal.objective.meets
    if exact is not None:
        with torch.no_grad():
            exact_scores = [pair_scores(pf, plain(exact), exact.metric) for pf in chosen]
        best_r = first = float(mean_r(exact_scores, chosen, held))
        best = exact
        if goal is not None:
            acc_first = acc_best = goal.accuracy_of(exact)
            best_r = first = goal.value(first, acc_first)
            best_ok = meets(acc_first)
    start_ok = best_ok
    while True:
        values = model.values()
        opt.zero_grad()
        held_r = []
        for pf, fit_rows, held_rows in zip(chosen, train, held):
            # one pair's graph at a time: what it keeps for the backward (its products in float32)
            # is freed before the next pair's is made
            scores = pair_scores(pf, model.current(), values.metric)
            held_r.append(float(pearson(scores.detach()[held_rows], pf.human[held_rows])))
            (-pearson(scores[fit_rows], pf.human[fit_rows]) / len(chosen)).backward()
        now, acc = sum(held_r) / len(held_r), None
        if goal is not None:
            good, bad = goal.scores(model.current(), values.metric)
            acc = goal.accuracy(good, bad)
            now = goal.value(now, acc)
            goal.loss(goal.surrogate(good, bad)).backward()
        ok = meets(acc)
        ranked = now if ok else (acc or 0.0) - 3.0  # |r| <= 1, accuracy in 0..1: below every value that meets it
        if steps == 0:
            path_r, first = ranked, (first if exact is not None else now)
            if exact is None:
                acc_first, start_ok = acc, ok
        elif ranked > path_r + 1e-6:  # patience runs out on the path's own best, not the start's: a path
            path_r, since = ranked, 0  # from a softened start may need many steps to climb past it
        else:
            since += 1
        if (steps == 0 and exact is None) or (ok and (not best_ok or now > best_r + 1e-6)):
            best_r, best, best_ok, acc_best = now, values, ok, acc
        if steps >= plan.steps or since >= plan.patience or time.monotonic() > deadline:
            return Fitted(best, steps, first, best_r, start_ok, acc_first, acc_best)
        model.penalty().backward()
        opt.step()
        step_done()
        steps += 1


@dataclass
class Fold:
    """One outer fold: the language pair left out, the fitted values (on the others) and the
    held-out Pearson r of the fitted and of the starting metric."""

    held_out: str
    fitted: Fitted
    r_fitted: float
    r_start: float


@dataclass
class Interval:
    """A mean over folds and its 95% bootstrap interval."""

    estimate: float
    low: float
    high: float


@dataclass
class Estimate:
    """The nested estimate: the ``folds`` and, per metric (``fitted``, ``start``) and for
    their difference (``gain``), the mean held-out |r| with an interval."""

    folds: list[Fold] = field(default_factory=list)
    intervals: dict[str, Interval] = field(default_factory=dict)


def abs_r(scores: Sequence[torch.Tensor], features: Features, which: Sequence[int]) -> list[float]:
    """|r| with the human scores of each language pair in ``which``."""
    return [abs(float(np.corrcoef(scores[i].numpy(), features.pairs[i].human.numpy())[0, 1])) for i in which]


def intervals(features: Features, folds: Sequence[Fold], fitted: Sequence[torch.Tensor],
              start: Sequence[torch.Tensor], resamples: int, seed: int) -> dict[str, Interval]:
    """The mean held-out |r| of the fitted and the starting metric over the folds, and of
    their difference, each with a 95% percentile interval: the segments of each held-out
    language pair resampled with replacement (one draw per pair, shared by both metrics, so
    the difference's interval is paired). ``fitted[k]``, ``start[k]``: the scores of fold k's
    held-out pair."""
    names = [pf.name for pf in features.pairs]
    boot = {"fitted": np.zeros(resamples), "start": np.zeros(resamples)}
    for k, fold in enumerate(folds):
        human = features.pairs[names.index(fold.held_out)].human.numpy()
        idx = bootstrap_indices(len(human), resamples, seed + k)
        for name, scores in (("fitted", fitted[k]), ("start", start[k])):
            boot[name] += np.abs(pearson_rows(scores.numpy()[idx], human[idx])) / len(folds)
    est = {"fitted": float(np.mean([f.r_fitted for f in folds])), "start": float(np.mean([f.r_start for f in folds]))}
    out = {n: Interval(est[n], *np.nanpercentile(boot[n], [2.5, 97.5]).tolist()) for n in est}
    out["gain"] = Interval(est["fitted"] - est["start"],
                           *np.nanpercentile(boot["fitted"] - boot["start"], [2.5, 97.5]).tolist())
    return out


def nested(features: Features, start: Values, learn: Sequence[str], plan: Optimisation, deadline: Callable[[int], float],
           resamples: int = 1000, step_done: Callable[[], None] = lambda: None, exact: Values | None = None,
           goal: Goal | None = None) -> Estimate:
    """Leave one language pair out: fit on the others, score the one left out, for every pair;
    the intervals of :func:`intervals`. ``deadline(k)``: when fold ``k``'s fit must stop;
    ``exact``: the starting composition (default ``start``), compared on each held-out pair;
    ``goal``: a challenge objective each fold's fit chooses its values by (the estimate itself
    is the held-out |r|)."""
    out = Estimate()
    everything = range(len(features.pairs))
    exact = exact or start
    start_scores = scores_of(features, exact)
    fitted_scores, held_start = [], []
    for k in everything:
        fitted = fit_values(features, [i for i in everything if i != k], start, learn, plan, deadline(k), step_done,
                            exact, goal)
        scores = scores_of(features, fitted.values)
        fitted_scores.append(scores[k])
        held_start.append(start_scores[k])
        out.folds.append(Fold(features.pairs[k].name, fitted, abs_r(scores, features, [k])[0],
                              abs_r(start_scores, features, [k])[0]))
    out.intervals = intervals(features, out.folds, fitted_scores, held_start, resamples, plan.seed)
    return out
