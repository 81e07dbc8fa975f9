"""Successive halving: every run screened on a sample, the best promoted to more segments
within what the screen cost, level by level for every fold at once."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import ConfigError
from .book import Book
from .budget import Pace
from ..evaluation.objective import Objective
from .selection import preferred


@dataclass
class Trace:
    """One search: the ``ranking`` of the runs that reached the last level (best value first;
    ineligible ones left out), the level each run reached and its value there, and the
    ``selected`` run (the best, or a published configuration within a standard error of it)."""

    ranking: list[int]
    reached: dict[int, int]
    value: dict[int, float]
    selected: int


def halve(book: Book, candidates: Sequence[int], lps: Sequence[int], objective: Objective = Objective(),
          cost: Sequence[float] | None = None) -> Trace:
    """Successive halving of ``candidates`` on the language pairs ``lps`` (the book's schedule).

    Parameters
    ----------
    book : Book
        The runs, their scores and the schedule.
    candidates : sequence of int
        The entries searched.
    lps : sequence of int
        The language pairs searched on.
    objective : Objective
        What is maximised.
    cost : sequence of float, optional
        Each entry's seconds per segment, for promotion within the screen's cost.

    Returns
    -------
    Trace
    """
    return halve_together(book, candidates, [lps], objective, cost=cost)[0]


def halve_together(book: Book, candidates: Sequence[int], searches: Sequence[Sequence[int]],
                   objective: Objective = Objective(), log: Callable[[str], None] | None = None,
                   cost: Sequence[float] | None = None, also: Sequence[int] = (), pace: Pace | None = None
                   ) -> list[Trace]:
    """Successive halving of ``candidates`` on each set of language pairs of ``searches`` (the
    folds of a cross-validation and the search on every pair), level by level together.

    What every search needs at a level is computed in one engine call per encoder. ``cost``:
    each entry's seconds per segment (:attr:`Cost.per_score`), for promotion within the
    screen's cost. At the last level every run left is scored on every pair of the searches,
    with ``also`` (runs scored there whatever the searches keep): a fold's selection then has
    its left-out pair's scores, and the texts are encoded once for all. ``pace`` compares each
    level's time with the plan's: where the search falls behind, the later levels promote the
    share of their runs that still fits (:meth:`Pace.after`).

    Returns
    -------
    list of Trace
        One per search, in order.
    """
    say = log or (lambda _msg: None)
    entries = book.entries
    start = [e for e in candidates if objective.minimum is None or
             (entries[e].accuracy is not None and entries[e].accuracy >= objective.minimum)]
    if not start:
        raise ConfigError(f"no run of the space meets the objective's constraint ({objective})")
    alive = [list(start) for _ in searches]
    segments = [[sum(len(book.sample(l, level)) for l in lps) for level in range(book.schedule.levels)]
                for lps in searches]
    screen = [sum(cost[e] for e in start) * segs[0] if cost is not None else math.inf for segs in segments]
    reached: list[dict[int, int]] = [{} for _ in searches]
    value: list[dict[int, float]] = [{} for _ in searches]
    out: list[Trace] = []
    last = book.schedule.levels - 1
    for level in range(book.schedule.levels):
        t = time.perf_counter()
        if level == last:
            runs = sorted({*(e for a in alive for e in a), *also})
            book.need((e, l, level) for e in runs for l in sorted({l for lps in searches for l in lps}))
        else:
            runs = sorted({e for a in alive for e in a})
            book.need((e, l, level) for s, lps in enumerate(searches) for e in alive[s] for l in lps)
        say(f"level {level + 1} of {book.schedule.levels}: {len(runs)} runs on {book.segments(level)} segments "
            f"({time.perf_counter() - t:.0f} s)")
        share = pace.after(level, say) if pace is not None and level < last else 1.0
        for s, lps in enumerate(searches):
            scores = book.mean_abs_r(alive[s], lps, level) + np.array(
                [objective.weight * (entries[e].accuracy or 0.0) for e in alive[s]])
            for e, v in zip(alive[s], scores):
                reached[s][e], value[s][e] = level, float(v)
            order = [alive[s][i] for i in np.argsort(-np.where(np.isfinite(scores), scores, -np.inf), kind="stable")
                     if math.isfinite(scores[i])]
            if not order:
                raise ConfigError("no run has a defined correlation on every language pair")
            if level == last:
                out.append(Trace(order, reached[s], value[s], preferred(book, order, value[s], lps, level)))
            else:
                count = max(1, math.floor(book.schedule.survivors(len(order))[1] * share))
                alive[s] = promoted(order[:count], cost, screen[s] * share, segments[s][level + 1])
    return out


def promoted(best_first: Sequence[int], cost: Sequence[float] | None, budget: float, segments: int) -> list[int]:
    """The runs that go on, best first, within ``budget`` seconds on ``segments`` (the best
    always): a barycenter costs orders of magnitude more than a greedy matching, and a
    mid-ranked expensive run would otherwise cost more than the whole screen."""
    if cost is None:
        return list(best_first)
    keep, spent = [], 0.0
    for e in best_first:
        if not keep or spent + cost[e] * segments <= budget:
            keep.append(e)
            spent += cost[e] * segments
    return keep


__all__ = ["Trace", "halve", "halve_together", "promoted"]
