"""Gradient ascent on the mean Pearson r over language pairs, with early stopping on an inner
split of the segments (seeded), and the nested leave-one-language-pair-out estimate."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence, cast

import numpy as np
import torch

from ..evaluation.stats import CrossValidation, leave_one_pair_out
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


def abs_r(scores: Sequence[torch.Tensor], features: Features, which: Sequence[int]) -> list[float]:
    """|r| with the human scores of each language pair in ``which``."""
    return [abs(float(np.corrcoef(scores[i].numpy(), features.pairs[i].human.numpy())[0, 1])) for i in which]


def nested(features: Features, start: Values, learn: Sequence[str], plan: Optimisation, deadline: Callable[[int], float],
           resamples: int = 1000, step_done: Callable[[], None] = lambda: None, exact: Values | None = None,
           goal: Goal | None = None) -> CrossValidation[Fitted | Values]:
    """Leave one language pair out (:func:`~alignscore.evaluation.stats.leave_one_pair_out`):
    fit on the others, score the one left out, for every pair, beside the start; the runs
    ``fitted`` (its :class:`Fitted`) and ``start`` (``exact``), and the gain of the one over the
    other. ``deadline(k)``: when fold ``k``'s fit must stop; ``exact``: the starting composition
    (default ``start``), compared on each held-out pair; ``goal``: a challenge objective each
    fold's fit chooses its values by (the estimate itself is the held-out |r|)."""
    exact = exact or start
    start_scores = scores_of(features, exact)

    def choose(trains: list[list[int]]) -> list[dict[str, Fitted | Values]]:
        return [{"fitted": fit_values(features, train, start, learn, plan, deadline(k), step_done, exact, goal),
                 "start": exact} for k, train in enumerate(trains)]

    def score(k: int, chosen: Mapping[str, Fitted | Values]) -> tuple[np.ndarray, np.ndarray]:
        fitted = cast(Fitted, chosen["fitted"])
        return (torch.stack([scores_of(features, fitted.values)[k], start_scores[k]]).numpy(),
                features.pairs[k].human.numpy())

    return leave_one_pair_out([pf.name for pf in features.pairs], choose, score, resamples, plan.seed)
