"""The budget of a search: the schedule that fits it, a screen harder where the default budget
is in effect, and the pace of a search that falls behind its plan.

Everything here is arithmetic on a measured :class:`~.cost.Cost` and a clock passed in: no
timing of its own, so that the plan can be tested with made-up costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..errors import ConfigError
from .cost import Cost
from .schedule import HARDER, SCHEDULES, Schedule

DEFAULT_BUDGET_MIN = 30.0  # minutes: `alignscore tune` without --budget
PROBE_SHARE = 0.1  # the probe takes at most this share of the budget
PROBE_SECONDS = 60.0  # and at most this long
HEADROOM = 0.65  # a plan takes at most this share of the time left: searches run over their estimates (RESULTS.md)


def probe_seconds(budget_s: float) -> float:
    """The time the cost probe may take: a tenth of the budget, at most a minute."""
    return min(PROBE_SHARE * budget_s, PROBE_SECONDS)


@dataclass(frozen=True)
class Plan:
    """The plan of a search: its ``schedule``, its estimated ``seconds``, the entries it
    searches (``runs``; all of them where None) and, where it screens harder than the default
    budget's schedules, the ``note`` that says so."""

    schedule: Schedule
    seconds: float
    runs: tuple[int, ...] | None = None
    note: str | None = None
    levels: tuple[tuple[float, float], ...] = field(default=(), repr=False)


def plan_search(cost: Cost, sizes: Sequence[int], budget_s: float, explicit: bool = True, seed: int = 0,
                label: str = "budget=", given: float | None = None, headroom: float = 1.0) -> Plan:
    """The schedule that scores the most segments within ``headroom * budget_s`` seconds.

    The full grid where it fits, else the first of :data:`SCHEDULES` that fits. Where none
    does, an ``explicit`` budget is refused; the default one screens harder: the schedules of
    :data:`HARDER`, then a seeded sample of the runs (the published configurations first) of
    the largest size the hardest schedule fits, said in :attr:`Plan.note`; where not even one
    run fits, it is refused too: a plan that does not fit is never run.

    Parameters
    ----------
    cost : Cost
        The measured cost of every entry.
    sizes : sequence of int
        Each language pair's segments.
    budget_s : float
        Seconds left for the search.
    explicit : bool
        Whether the user gave the budget.
    seed : int
        The seed of a sample of the runs.
    label : str
        How the budget is named in the error.
    given : float, optional
        The budget in minutes as the user gave it, for the error (default: ``budget_s``).
    headroom : float
        The share of ``budget_s`` a plan may take (:data:`HEADROOM` in a search: the rest is
        for an estimate that falls short).

    Returns
    -------
    Plan

    Raises
    ------
    ConfigError
        An explicit budget that not even the cheapest schedule fits, or a default one that not
        one run fits, with the estimate.

    Examples
    --------
    >>> cost = Cost(per_text=0.0, per_score=(0.001,) * 10)
    >>> plan_search(cost, [100], 1e9).schedule
    Schedule(fractions=(1.0,), keep=1.0, min_keep=4)
    """
    n = len(cost.per_score)
    fits = headroom * budget_s
    for schedule in SCHEDULES if explicit else SCHEDULES + HARDER:
        seconds = cost.seconds(sizes, schedule)
        if seconds <= fits:
            note = None if schedule in SCHEDULES else (
                f"the default budget of {budget_s / 60:.1f} min left does not fit the usual schedules: screening "
                f"harder ({schedule}); give {label} to be refused instead")
            return Plan(schedule, seconds, None, note, tuple(cost.parts(sizes, schedule)))
    cheapest = SCHEDULES[-1]
    if explicit:
        spent = "" if given is None else f" ({max(budget_s, 0) / 60:.1f} min left after loading and measuring)"
        raise ConfigError(f"the search does not fit {label} {budget_s / 60 if given is None else given:g} min"
                          f"{spent}: {n} runs take about "
                          f"{cost.seconds(sizes, cheapest) / 60:.1f} min even with {cheapest}, measured here; "
                          f"narrow the space or raise {label}")
    hardest = HARDER[-1]
    order = subsample_order(n, cost.always, seed)
    low, high = 0, n  # the largest prefix of `order` that fits: a bisection
    while low < high:
        mid = (low + high + 1) // 2
        if cost.only(order[:mid]).seconds(sizes, hardest) <= fits:
            low = mid
        else:
            high = mid - 1
    if low == 0:
        one = cost.only(order[:1]).seconds(sizes, hardest)
        raise ConfigError(f"not even one run fits the default budget ({max(budget_s, 0) / 60:.1f} min left after "
                          f"loading and measuring): one takes about {one / 60:.1f} min here; give a larger {label} "
                          "or fewer segments")
    runs = tuple(sorted(order[:low]))
    sub = cost.only(runs)
    published = len(set(runs) & set(cost.always))
    note = (f"the space does not fit the default budget ({budget_s / 60:.1f} min left; all {n} runs would take "
            f"about {cost.seconds(sizes, hardest) / 60:.1f} min): searching a seeded sample of {len(runs)} runs "
            f"({published} of the {len(cost.always)} published configurations among them) with {hardest}; give "
            f"{label} to search them all or be refused")
    return Plan(hardest, sub.seconds(sizes, hardest), runs, note, tuple(sub.parts(sizes, hardest)))


def subsample_order(n: int, always: Sequence[int], seed: int) -> list[int]:
    """``range(n)`` with the ``always`` entries first, then the others in a seeded order."""
    rest = [e for e in range(n) if e not in set(always)]
    return list(always) + [rest[i] for i in np.random.default_rng(seed).permutation(len(rest))]


def replan_share(levels: Sequence[tuple[float, float]], done: int, elapsed: float, budget_s: float) -> float:
    """The share of the planned runs the levels after ``done`` may score to end within
    ``budget_s``, where the levels up to ``done`` took ``elapsed`` seconds.

    The levels after ``done`` are taken to be as slow against their plan as those before
    (``levels``: each one's planned encoding and scoring seconds); the encoding is fixed, the
    scoring shrinks with the runs promoted.

    Parameters
    ----------
    levels : sequence of (float, float)
        Each level's planned encoding and scoring seconds.
    done : int
        The last level done.
    elapsed : float
        Seconds the search took so far.
    budget_s : float
        Seconds the search may take.

    Returns
    -------
    float
        1 where the plan still fits, else the share in ``[0, 1]``.

    Examples
    --------
    >>> replan_share([(0, 10), (0, 10)], 0, 10.0, 20.0)
    1.0
    >>> replan_share([(0, 10), (0, 10)], 0, 20.0, 30.0)  # twice as slow: half the runs fit
    0.5
    """
    planned = sum(e + s for e, s in levels[:done + 1])
    slow = max(elapsed / planned, 1.0) if planned > 0 else 1.0
    encoding = slow * sum(e for e, _ in levels[done + 1:])
    scoring = slow * sum(s for _, s in levels[done + 1:])
    left = budget_s - elapsed
    if encoding + scoring <= left or scoring <= 0:
        return 1.0
    return float(min(1.0, max(0.0, (left - encoding) / scoring)))


@dataclass
class Pace:
    """The plan's time per level against the search's own, on ``clock``: :meth:`after` says
    what share of the planned runs the next levels may score (re-planning the remaining levels
    where the search falls behind)."""

    levels: Sequence[tuple[float, float]]
    budget_s: float
    clock: Callable[[], float]
    start: float = math.nan
    shares: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if math.isnan(self.start):
            self.start = self.clock()

    def after(self, level: int, say: Callable[[str], None] = lambda _m: None) -> float:
        """The share after ``level`` is done (1: on plan), said in one line when below 1."""
        elapsed = self.clock() - self.start
        share = replan_share(self.levels, level, elapsed, self.budget_s)
        if share < 1:
            planned = sum(e + s for e, s in self.levels[:level + 1])
            say(f"levels 1-{level + 1} took {elapsed:.0f} s against {planned:.0f} s planned: the remaining levels "
                f"re-planned to promote {share:.0%} of the runs planned")
        self.shares.append(share)
        return share


__all__ = ["DEFAULT_BUDGET_MIN", "HEADROOM", "Pace", "Plan", "plan_search", "probe_seconds",
           "replan_share"]
