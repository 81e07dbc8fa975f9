"""The whole search with nested cross-validation over the language pairs: each fold searches
on the other pairs and scores its selection on the one left out, beside every published
configuration; the search on every pair gives the selection."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from ..scorer import Scorer
from ..evaluation.stats import Fold, Interval, leave_one_pair_out
from ..evaluation.wmt import LangPair
from .book import Book, Entry
from .budget import Pace
from .cost import Cost
from .halving import Trace, halve_together
from ..evaluation.objective import Objective
from .schedule import Schedule
from .selection import best_of


@dataclass(frozen=True)
class Published:
    """A published configuration of the space: a single run, or a group of runs (a paper's
    table) chosen by its best on the pairs a search sees."""

    name: str
    members: tuple[int, ...]

    @property
    def group(self) -> bool:
        return len(self.members) > 1


@dataclass
class SearchRun:
    """What :func:`search` found: the entries, the ``final`` search on every pair (its
    selection is what best.toml holds), the nested cross-validation ``folds`` (each compared
    run's entry: ``"selected"``, the search's selection on the other pairs, and every baseline)
    with the ``estimates`` of each compared run (mean held-out |r| with a 95% bootstrap
    interval) and the ``gains`` of the selection over each baseline, the held-out data
    comparison, and what it cost."""

    model: str
    lang_pairs: list[LangPair]
    entries: list[Entry]
    schedule: Schedule
    objective: Objective
    final: Trace
    published: list[Published]
    folds: Sequence[Fold[int]] = ()
    estimates: Mapping[str, Interval] = field(default_factory=dict)
    gains: Mapping[str, Interval] = field(default_factory=dict)
    holdout: list[Fold[int]] = field(default_factory=list)
    holdout_source: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    estimated_seconds: float | None = None
    notes: dict[str, int] = field(default_factory=dict)
    mean_abs_r: dict[int, float] = field(default_factory=dict)
    per_pair: dict[int, list[float]] = field(default_factory=dict)

    @property
    def best(self) -> int:
        """The selected entry."""
        return self.final.selected


def published(entries: Sequence[Entry]) -> list[Published]:
    """The published configurations the entries carry, in first-seen order: a name whose
    entries share it (``Table 9: ...`` entries under their group ``Table 9``) is a group.

    Parameters
    ----------
    entries : sequence of Entry

    Returns
    -------
    list of Published
    """
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        for name in e.published:
            groups.setdefault(name, []).append(i)
            if ": " in name:
                groups.setdefault(name.split(": ", 1)[0], []).append(i)
    return [Published(name, tuple(dict.fromkeys(members))) for name, members in groups.items()
            if ": " not in name]


def search(entries: list[Entry], scorers: list[Scorer], lang_pairs: Sequence[LangPair], schedule: Schedule,
           objective: Objective = Objective(), holdout: Sequence[LangPair] = (), holdout_source: str | None = None,
           resamples: int = 1000, seed: int = 0, progress: bool = False,
           log: Callable[[str], None] | None = None, cost: Cost | None = None, runs: Sequence[int] | None = None,
           pace: Pace | None = None) -> SearchRun:
    """Nested cross-validation over the language pairs, then the search on every pair.

    Parameters
    ----------
    entries, scorers : list
        The runs (:func:`~.prepare.prepare`).
    lang_pairs : sequence of LangPair
        The data searched on.
    schedule : Schedule
        The levels of successive halving.
    objective : Objective
        What is maximised.
    holdout : sequence of LangPair
        Held-out data the selection and the published configurations are scored on.
    holdout_source : str, optional
        Where the held-out data are from, for the report.
    resamples : int
        Resamples of the intervals.
    seed : int
        Seed of the samples and the resamples.
    progress : bool
        Progress bars of the engine.
    log : callable, optional
        Takes each line of progress.
    cost : Cost, optional
        The measured cost (:func:`~.cost.measure`): bounds what each level promotes.
    runs : sequence of int, optional
        The entries searched (default: all); the published configurations compared are those
        among them.
    pace : Pace, optional
        Re-plans the later levels where the search falls behind its plan.

    Returns
    -------
    SearchRun
    """
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    t0 = time.perf_counter()
    book = Book(entries, scorers, lang_pairs, schedule, seed, progress)
    every = list(range(len(entries))) if runs is None else list(runs)
    lps = list(range(len(lang_pairs)))
    # a sample of the runs compares with the published configurations in it (the budget's plan)
    base = [b for b in published(entries) if set(b.members) <= set(every)]
    last = schedule.levels - 1
    finals: list[Trace] = []

    def choose(trains: list[list[int]]) -> list[dict[str, int]]:
        # every fold (each language pair left out) and the search on every pair, level by level together;
        # the published configurations are scored on every segment with the last level (a group picks
        # its best on the pairs a fold sees)
        *traces, final = halve_together(book, every, [*trains, lps], objective, say,
                                        cost.per_score if cost is not None else None,
                                        also=[e for b in base for e in b.members], pace=pace)
        finals.append(final)
        return [{"selected": trace.selected, **{b.name: b.members[0] if not b.group else
                                                best_of(book, b.members, train, last) for b in base}}
                for train, trace in zip(trains, traces)]

    def score(held: int, chosen: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
        book.need((e, held, last) for e in chosen.values())
        (block,), (human,) = book.blocks(list(chosen.values()), [held], last)
        e = chosen["selected"]
        say(f"fold {lang_pairs[held].name}: selected {entries[e].id} ({entries[e].label}), held-out |r| "
            f"{book.abs_r([e], held, last)[0]:.3f}")
        return block, human

    cv = leave_one_pair_out([lp.name for lp in lang_pairs], choose, score, resamples, seed)
    final = finals[0]
    run = SearchRun(", ".join(sorted({e.spec.encoder.model for e in entries})), lang_pairs, entries, schedule,
                    objective, final, base, cv.folds, cv.estimates, cv.gains)
    for e, level in final.reached.items():
        run.mean_abs_r[e] = float(book.mean_abs_r([e], lps, level)[0])
        run.per_pair[e] = [float(book.abs_r([e], l, level)[0]) for l in lps]
    if holdout:
        run.holdout, run.holdout_source = held_out(entries, scorers, run, holdout), holdout_source
    run.seconds = {**{f"level {k + 1}": s for k, s in enumerate(book.seconds)},
                   "total": time.perf_counter() - t0}
    run.notes = dict(book.notes)
    return run


def held_out(entries: Sequence[Entry], scorers: Sequence[Scorer], run: SearchRun,
             holdout: Sequence[LangPair]) -> list[Fold[int]]:
    """The selection and every single baseline (a group: its best on the search's pairs) on
    every segment of the held-out pairs."""
    chosen = {"selected": run.best}
    for b in run.published:
        chosen[b.name] = b.members[0] if not b.group else max(
            b.members, key=lambda e: run.mean_abs_r.get(e, -math.inf) if math.isfinite(run.mean_abs_r.get(e, -1))
            else -math.inf)
    book = Book(list(entries), list(scorers), list(holdout), Schedule((1.0,)))
    book.need((e, l, 0) for e in chosen.values() for l in range(len(holdout)))
    return [Fold(lp.name, chosen, {name: float(book.abs_r([e], l, 0)[0]) for name, e in chosen.items()})
            for l, lp in enumerate(holdout)]


__all__ = ["Published", "SearchRun", "published", "held_out", "search"]
