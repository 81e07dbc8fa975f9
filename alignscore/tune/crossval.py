"""The whole search with nested cross-validation over the language pairs: each fold searches
on the other pairs and scores its selection on the one left out, beside every published
configuration; the search on every pair gives the selection."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..scorer import Scorer
from ..evaluation.stats import Interval, percentile_interval, pooled_abs_r
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
class Fold:
    """Fold ``lang_pair`` of the nested cross-validation: the run the search selected on the
    other pairs, and each baseline's run (a group's best on the other pairs); ``abs_r`` their
    |r| on the left-out pair (every segment)."""

    lang_pair: str
    selected: int
    published: dict[str, int]
    abs_r: dict[str, float]


@dataclass
class SearchRun:
    """What :func:`search` found: the entries, the ``final`` search on every pair (its
    selection is what best.toml holds), the nested cross-validation ``folds`` with the
    ``estimate`` of each compared run (``"selected"`` and every baseline: mean held-out |r| with
    a 95% bootstrap interval) and of the difference between the selection and each baseline,
    the held-out data comparison, and what it cost."""

    model: str
    lang_pairs: list[LangPair]
    entries: list[Entry]
    schedule: Schedule
    objective: Objective
    final: Trace
    published: list[Published]
    folds: list[Fold] = field(default_factory=list)
    estimates: dict[str, Interval] = field(default_factory=dict)
    gains: dict[str, Interval] = field(default_factory=dict)
    holdout: list[Fold] = field(default_factory=list)
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
    # every fold (each language pair left out) and the search on every pair, level by level together
    trains = [[l for l in lps if l != held] for held in lps] if len(lps) >= 2 else []
    # the published configurations are scored on every segment with the last level (a group picks
    # its best on the pairs a fold sees)
    *traces, final = halve_together(book, every, [*trains, lps], objective, say,
                                    cost.per_score if cost is not None else None,
                                    also=[e for b in base for e in b.members], pace=pace)
    choices = []
    for train, trace in zip(trains, traces):
        chosen = {"selected": trace.selected}
        for b in base:
            chosen[b.name] = b.members[0] if not b.group else best_of(book, b.members, train, last)
        choices.append(chosen)
    book.need((e, held, last) for held, chosen in enumerate(choices) for e in chosen.values())
    folds: list[Fold] = []
    for held, chosen in enumerate(choices):
        rs = {name: float(book.abs_r([e], held, last)[0]) for name, e in chosen.items()}
        folds.append(Fold(lang_pairs[held].name, chosen["selected"],
                          {k: v for k, v in chosen.items() if k != "selected"}, rs))
        say(f"fold {lang_pairs[held].name}: selected {entries[chosen['selected']].id} "
            f"({entries[chosen['selected']].label}), held-out |r| {rs['selected']:.3f}")
    run = SearchRun(", ".join(sorted({e.spec.encoder.model for e in entries})), lang_pairs, entries, schedule,
                    objective, final, base, folds)
    for e, level in final.reached.items():
        run.mean_abs_r[e] = float(book.mean_abs_r([e], lps, level)[0])
        run.per_pair[e] = [float(book.abs_r([e], l, level)[0]) for l in lps]
    if folds:
        run.estimates, run.gains = intervals(book, folds, resamples, seed)
    if holdout:
        run.holdout, run.holdout_source = held_out(entries, scorers, run, holdout), holdout_source
    run.seconds = {**{f"level {k + 1}": s for k, s in enumerate(book.seconds)},
                   "total": time.perf_counter() - t0}
    run.notes = dict(book.notes)
    return run


def intervals(book: Book, folds: Sequence[Fold], resamples: int, seed: int
              ) -> tuple[dict[str, Interval], dict[str, Interval]]:
    """The mean held-out |r| of each compared run over the folds, with a 95% percentile
    interval from resampling every left-out pair's segments (the same resamples for every run:
    the differences are paired), and the selection's gain over each."""
    last = book.schedule.levels - 1
    names = list(folds[0].abs_r)
    blocks, humans = [], []
    for f in folds:
        lp = next(i for i, p in enumerate(book.lang_pairs) if p.name == f.lang_pair)
        chosen = {"selected": f.selected, **f.published}
        (block,), (human,) = book.blocks([chosen[name] for name in names], [lp], last)
        blocks.append(block)
        humans.append(human)
    boot = dict(zip(names, pooled_abs_r(blocks, humans, resamples, seed)))
    est = {name: float(np.mean([f.abs_r[name] for f in folds])) for name in names}
    estimates = {n: percentile_interval(est[n], boot[n]) for n in names}
    gains = {n: percentile_interval(est["selected"] - est[n], boot["selected"] - boot[n])
             for n in names if n != "selected"}
    return estimates, gains


def held_out(entries: Sequence[Entry], scorers: Sequence[Scorer], run: SearchRun,
             holdout: Sequence[LangPair]) -> list[Fold]:
    """The selection and every single baseline (a group: its best on the search's pairs) on
    every segment of the held-out pairs."""
    chosen = {"selected": run.best}
    for b in run.published:
        chosen[b.name] = b.members[0] if not b.group else max(
            b.members, key=lambda e: run.mean_abs_r.get(e, -math.inf) if math.isfinite(run.mean_abs_r.get(e, -1))
            else -math.inf)
    book = Book(list(entries), list(scorers), list(holdout), Schedule((1.0,)))
    book.need((e, l, 0) for e in chosen.values() for l in range(len(holdout)))
    return [Fold(lp.name, run.best, {k: v for k, v in chosen.items() if k != "selected"},
                 {name: float(book.abs_r([e], l, 0)[0]) for name, e in chosen.items()})
            for l, lp in enumerate(holdout)]


__all__ = ["Published", "Fold", "SearchRun", "published", "held_out", "intervals", "search"]
