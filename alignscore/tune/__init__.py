"""Composition search (``alignscore tune``): which run of a space correlates best with human
judgments, found within a time budget, with an honest estimate of how well the choice does on
language pairs it never saw.

For runs ``k`` and language pairs ``l``, ``R_k(S) = mean_l |r_kl(S_l)|``: the mean over the
language pairs of the absolute Pearson r of the run's metric with the human scores, on the
segments ``S_l`` of each pair.

- **Successive halving.** A schedule of levels scores more segments at each level
  (``fractions``: shares of each pair's segments, the last 1: all of them, nested samples drawn
  once with a seed) and keeps a share of the runs from one level to the next (``keep``): level
  0 screens every run on a small sample, the last level scores the survivors on everything.
  Scores on a sample are those of the engine on that sample (idf fitted on it), so a screen is
  a noisy but paired comparison: every run sees the same segments. The full grid is the
  schedule with one level.
- **Promotion within the screen's cost.** With the runs' measured costs (:class:`Cost`), a level
  promotes its best ``keep`` share in order of value, passing over any run whose scoring on the
  next level's segments would take the level past the time the screen took (the best one always
  goes on): a barycenter costs orders of magnitude more than a greedy matching, and a mid-ranked
  expensive run would otherwise cost more than the whole screen. Every level then costs at most
  about what the screen did.
- **Selection.** The best ``R`` at the last level among the eligible runs (defined |r| on every
  pair; with a challenge-set constraint, accurate enough; ties go to the first in space order),
  unless a published configuration of the space is within one standard error of it (the
  standard deviation of the paired difference in ``R`` over resamples of every pair's
  segments): then the best such published configuration, which has evidence beyond these data
  (the one-standard-error rule; with many runs, the best on the data is the most optimistic).
- **Nested cross-validation.** For each pair ``l``, the whole search runs on the other pairs and
  its selection is scored on ``l``; the mean over ``l`` is the estimate of the procedure on an
  unseen pair. Its 95% interval resamples the segments of every left-out pair (the same
  resamples for every run compared). The published configurations the space names are scored
  the same way: a single one as it is, a group (a table of a paper) by its best run on the other
  pairs.
- **Cost.** Every score is computed once and kept (:class:`Book`): the folds share the screens,
  and each engine call encodes every text once for all the runs of an encoder.
- **Budget.** A probe of bounded time measures the cost (:func:`measure`), the plan picks the
  schedule that fits (:func:`plan_search`; the default budget screens harder rather than refuse),
  and the search re-plans its later levels where it falls behind (:class:`Pace`).

Modules: ``schedule`` (levels and samples), ``objective``, ``book`` (entries and scores),
``halving`` (levels and promotion), ``selection`` (the one-standard-error rule), ``crossval``
(the whole search), ``prepare`` (entries from a space), ``cost`` (the cost and its probe),
``budget`` (the plan and its pace), ``tune`` (:func:`tune`, the library's entry point).
"""

from __future__ import annotations

from .book import Book, Entry
from .budget import DEFAULT_BUDGET_MIN, Pace, Plan, plan_search, probe_seconds, replan_share
from .cost import Cost, Probe, measure
from .crossval import Published, SearchRun, published, search
from .halving import Trace, halve, halve_together
from ..evaluation.objective import Objective, accuracy
from .prepare import challenge_accuracy, labels, prepare
from .schedule import HARDER, MIN_SEGMENTS, SCHEDULES, Schedule, samples
from .tune import TuneOptions, TuneResult, data_corpus, tune

__all__ = ["Book", "Cost", "DEFAULT_BUDGET_MIN", "Entry", "HARDER", "MIN_SEGMENTS", "Objective", "Pace", "Plan", "Probe",
           "Published", "SCHEDULES", "Schedule", "SearchRun", "Trace", "TuneOptions", "TuneResult", "accuracy",
           "challenge_accuracy", "data_corpus", "halve", "halve_together", "labels", "measure", "plan_search",
           "prepare", "probe_seconds", "published", "replan_share", "samples", "search", "tune"]
