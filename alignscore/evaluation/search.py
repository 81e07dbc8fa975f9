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
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..composition import Composition
from ..config import RunSpec, build_all
from ..engine import Pairs, score_groups
from ..errors import ConfigError
from ..scorer import Scorer
from .challenge import ALL, Item, challenge_pairs, judge
from .space import Candidate
from .stats import flat_rows, pearson_rows, williams_matrix
from .wmt import LangPair

MIN_SEGMENTS = 24  # the fewest segments of a pair a screen correlates on


# -- the schedule ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    """Levels of successive halving: at level ``k`` the survivors are scored on ``fractions[k]``
    of every language pair's segments (the last is 1), and ``keep`` of them (at least
    ``min_keep``) go on to the next level."""

    fractions: tuple[float, ...]
    keep: float = 1.0
    min_keep: int = 4

    @classmethod
    def halving(cls, eta: int, levels: int) -> "Schedule":
        """``levels`` levels, each scoring ``eta`` times the segments of the one before and
        keeping a ``1 / eta`` of its runs: every level costs about the same."""
        return cls(tuple(float(eta) ** -(levels - 1 - k) for k in range(levels)), 1 / eta)

    @property
    def levels(self) -> int:
        return len(self.fractions)

    def survivors(self, n: int) -> list[int]:
        """How many runs each level scores, starting from ``n``."""
        out = [n]
        for _ in self.fractions[1:]:
            out.append(min(out[-1], max(self.min_keep, math.ceil(out[-1] * self.keep))))
        return out

    def __str__(self) -> str:
        if self.levels == 1:
            return "every run on every segment (the full grid)"
        shares = ", ".join(f"{f:.3g}" for f in self.fractions)
        return f"successive halving: {self.levels} levels on {shares} of the segments, keeping {self.keep:.3g}"


# cheapest last: the first that fits the budget is used
SCHEDULES = (Schedule((1.0,)), Schedule.halving(3, 2), Schedule.halving(4, 2), Schedule.halving(3, 3),
             Schedule.halving(4, 3), Schedule.halving(4, 4))


def samples(n: int, fractions: Sequence[float], seed: int) -> list[np.ndarray]:
    """Nested samples of ``range(n)``: level ``k`` takes the first ``ceil(fractions[k] * n)`` of
    one seeded permutation (at least :data:`MIN_SEGMENTS`), in their original order."""
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(order[:_sample_size(n, f)]) for f in fractions]


# -- the objective ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Objective:
    """What is maximised: the mean |r| (``correlation``), plus ``weight`` times a challenge
    set's accuracy on ``category`` (``correlation + 0.5 * accuracy[drop-function]``), or subject
    to that accuracy being at least ``minimum`` (``correlation, accuracy[drop-function] >=
    0.8``). A category is one of the set's, or ``all`` (every item that is not a control)."""

    category: str | None = None
    weight: float = 0.0
    minimum: float | None = None

    PATTERN = re.compile(r"^\s*correlation\s*(?:(?P<sep>[,+])\s*(?:(?P<weight>[0-9.eE+-]+)\s*\*\s*)?"
                         r"accuracy\[(?P<cat>[^\]]+)\]\s*(?:>=\s*(?P<min>[0-9.eE+-]+))?\s*)?$")

    @classmethod
    def parse(cls, text: str) -> "Objective":
        m = cls.PATTERN.match(text)
        if m is None or (m["sep"] == "," and m["min"] is None) or (m["sep"] == "+" and m["min"] is not None) \
                or (m["sep"] == "," and m["weight"] is not None):
            raise ConfigError(f"--objective {text!r}: one of correlation, 'correlation + W * accuracy[CATEGORY]' "
                              "or 'correlation, accuracy[CATEGORY] >= X'")
        if m["sep"] is None:
            return cls()
        try:
            weight = float(m["weight"]) if m["weight"] else 1.0
            minimum = float(m["min"]) if m["min"] else None
        except ValueError:
            raise ConfigError(f"--objective {text!r}: cannot read its numbers") from None
        if not math.isfinite(weight) or weight < 0 or (minimum is not None and not 0 <= minimum <= 1):
            raise ConfigError(f"--objective {text!r}: the weight is a number >= 0 and the minimum accuracy in 0..1")
        return cls(m["cat"].strip(), weight if m["sep"] == "+" else 0.0, minimum)

    @property
    def uses_challenge(self) -> bool:
        return self.category is not None

    def __str__(self) -> str:
        if self.category is None:
            return "correlation"
        if self.minimum is not None:
            return f"correlation, accuracy[{self.category}] >= {self.minimum:g}"
        return f"correlation + {self.weight:g} * accuracy[{self.category}]"


def accuracy(items: Sequence[Item], good: np.ndarray, bad: np.ndarray, category: str) -> float:
    """The share of the items of ``category`` (``all``: every one that is not a control) whose
    good candidate scores above the bad one (a tie is a miss)."""
    chosen = np.array([(not i.control) if category == ALL else i.category == category for i in items])
    correct, _ = judge(good[chosen], bad[chosen])
    return float(correct.mean())


# -- runs and their scores ------------------------------------------------------------------------
@dataclass
class Entry:
    """One run of the search: its ``id``, a short ``label`` (the options that vary in the
    space), the sub-space it comes from, the ``values`` the space gave it, its compiled run
    (``spec``: what best.toml writes), the resolved ``composition``, its ``signature``, the
    published configurations it is (``published``, names from the space) and, with a challenge
    set, its ``accuracy``."""

    id: str
    label: str
    subspace: str
    values: dict[str, Any]
    spec: RunSpec
    composition: Composition
    signature: str
    published: list[str] = field(default_factory=list)
    accuracy: float | None = None


@dataclass
class Book:
    """Every score computed so far: ``scores[(entry, pair, level)]`` is the entry's metric on
    the level's sample of that pair's segments. :meth:`need` computes what is missing, one
    engine call per level and encoder (each text encoded once for every run of that encoder)."""

    entries: list[Entry]
    scorers: list[Scorer]
    lang_pairs: list[LangPair]
    schedule: Schedule
    seed: int = 0
    progress: bool = False
    scores: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    aligned: list[int] = field(default_factory=list)  # per level: (run, segment) scores computed
    notes: dict[str, int] = field(default_factory=dict)  # what the engine warned about, and how often
    _samples: list[list[np.ndarray]] = field(default_factory=list)
    _r: dict[tuple[int, int, int], float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._samples = [samples(len(lp), self.schedule.fractions, self.seed + i) for i, lp in
                         enumerate(self.lang_pairs)]
        self.seconds = [0.0] * self.schedule.levels
        self.aligned = [0] * self.schedule.levels

    def sample(self, lp: int, level: int) -> np.ndarray:
        return self._samples[lp][level]

    def segments(self, level: int) -> int:
        """How many segments of all the pairs the level scores."""
        return sum(len(s[level]) for s in self._samples)

    def need(self, wanted: Iterable[tuple[int, int, int]]) -> None:
        """Compute the scores of every ``(entry, pair, level)`` not computed yet."""
        missing = sorted({w for w in wanted if w not in self.scores}, key=lambda w: (w[2], w[1], w[0]))
        for level in sorted({w[2] for w in missing}):
            t = time.perf_counter()
            at = [w for w in missing if w[2] == level]
            for members in _by_encoder(self.scorers, {e for e, _, _ in at}).values():
                mine = [w for w in at if w[0] in members]
                lps = sorted({l for _, l, _ in mine})
                runs = [[e for e, l, _ in mine if l == lp] for lp in lps]
                groups = []
                for lp in lps:
                    pair, idx = self.lang_pairs[lp], self.sample(lp, level)
                    groups.append(Pairs.from_pairs([pair.references[i] for i in idx],
                                                   [pair.candidates[i] for i in idx]))
                first = self.scorers[members[0]]
                with warnings.catch_warnings(record=True) as caught:  # said once, counted (notes)
                    warnings.simplefilter("always")
                    results = score_groups(first.scoring_encoder(), groups,
                                           [[self.entries[e].composition for e in es] for es in runs],
                                           replace(first.runtime, progress=self.progress))
                for gist in (_gist(str(w.message)) for w in caught):
                    self.notes[gist] = self.notes.get(gist, 0) + 1
                for lp, es, res in zip(lps, runs, results):
                    for e, r in zip(es, res):
                        self.scores[(e, lp, level)] = r.metrics[self.entries[e].composition.metric].double().numpy()
                        self.aligned[level] += len(self.sample(lp, level))
            self.seconds[level] += time.perf_counter() - t

    def abs_r(self, entries: Sequence[int], lp: int, level: int) -> np.ndarray:
        """|r| of each entry with the human scores on the level's sample of ``lp`` (NaN where
        undefined: scores flat within rounding)."""
        todo = [e for e in entries if (e, lp, level) not in self._r]
        if todo:
            block = np.stack([self.scores[(e, lp, level)] for e in todo])
            human = self.lang_pairs[lp].human[self.sample(lp, level)]
            rs = np.abs(pearson_rows(block, np.broadcast_to(human, block.shape)))
            rs[flat_rows(block)] = np.nan
            self._r.update({(e, lp, level): float(r) for e, r in zip(todo, rs)})
        return np.array([self._r[(e, lp, level)] for e in entries])

    def mean_abs_r(self, entries: Sequence[int], lps: Sequence[int], level: int) -> np.ndarray:
        """Mean |r| over ``lps`` at ``level`` per entry (NaN where undefined on any)."""
        self.need((e, l, level) for e in entries for l in lps)
        return np.mean(np.stack([self.abs_r(entries, l, level) for l in lps]), axis=0)


def _gist(message: str) -> str:
    """A warning without its counts and figures: the same kind of warning from every batch is
    one note."""
    return re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", message.split(";")[0])


def _by_encoder(scorers: Sequence[Scorer], chosen: Iterable[int]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i in sorted(chosen):
        groups.setdefault(id(scorers[i].encoder), []).append(i)
    return groups


# -- the search ---------------------------------------------------------------------------------------
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
    """Successive halving of ``candidates`` on the language pairs ``lps`` (the book's schedule)."""
    return halve_together(book, candidates, [lps], objective, cost=cost)[0]


def halve_together(book: Book, candidates: Sequence[int], searches: Sequence[Sequence[int]],
                   objective: Objective = Objective(), log: Callable[[str], None] | None = None,
                   cost: Sequence[float] | None = None, also: Sequence[int] = ()) -> list[Trace]:
    """Successive halving of ``candidates`` on each set of language pairs of ``searches`` (the
    folds of a cross-validation and the search on every pair), level by level together: what
    every search needs at a level is computed in one engine call per encoder. ``cost``: each
    entry's seconds per segment (:attr:`Cost.per_score`), for promotion within the screen's
    cost (see the module's docstring). At the last level every run left is scored on every pair
    of the searches, with ``also`` (runs scored there whatever the searches keep): a fold's
    selection then has its left-out pair's scores, and the texts are encoded once for all."""
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
                out.append(Trace(order, reached[s], value[s], _preferred(book, order, value[s], lps, level)))
            else:
                alive[s] = _promoted(order[:book.schedule.survivors(len(order))[1]],
                                     cost, screen[s], segments[s][level + 1])
    return out


def _promoted(best_first: Sequence[int], cost: Sequence[float] | None, budget: float, segments: int) -> list[int]:
    """The runs that go on, best first, within ``budget`` seconds on ``segments`` (the best
    always)."""
    if cost is None:
        return list(best_first)
    keep, spent = [], 0.0
    for e in best_first:
        if not keep or spent + cost[e] * segments <= budget:
            keep.append(e)
            spent += cost[e] * segments
    return keep


def _preferred(book: Book, order: Sequence[int], value: Mapping[int, float], lps: Sequence[int], level: int,
               resamples: int = 200) -> int:
    """The selection among ``order`` (best value first): the best, or the best published
    configuration within one standard error of it (the paired difference of the mean |r| over
    ``lps``, resampling every pair's segments; seeded, so the same data select the same run)."""
    best = order[0]
    rivals = [e for e in order[1:] if book.entries[e].published]
    if book.entries[best].published or not rivals:
        return best
    rng = np.random.default_rng(0)
    diffs = np.zeros((len(rivals), resamples))
    for l in lps:
        human = book.lang_pairs[l].human[book.sample(l, level)]
        idx = rng.integers(0, len(human), size=(resamples, len(human)))
        r_best = np.abs(pearson_rows(book.scores[(best, l, level)][idx], human[idx]))
        for i, e in enumerate(rivals):
            diffs[i] += (r_best - np.abs(pearson_rows(book.scores[(e, l, level)][idx], human[idx]))) / len(lps)
    se = np.nanstd(diffs, axis=1)
    close = [e for e, s in zip(rivals, se) if value[best] - value[e] <= s]
    return close[0] if close else best


@dataclass(frozen=True)
class Baseline:
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
    baselines: dict[str, int]
    abs_r: dict[str, float]


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


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
    baselines: list[Baseline]
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
        return self.final.selected


def baselines(entries: Sequence[Entry]) -> list[Baseline]:
    """The published configurations the entries carry, in first-seen order: a name whose
    entries share it (``Table 9: ...`` entries under their group ``Table 9``) is a group."""
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        for name in e.published:
            groups.setdefault(name, []).append(i)
            if ": " in name:
                groups.setdefault(name.split(": ", 1)[0], []).append(i)
    return [Baseline(name, tuple(dict.fromkeys(members))) for name, members in groups.items()
            if ": " not in name]


def search(entries: list[Entry], scorers: list[Scorer], lang_pairs: Sequence[LangPair], schedule: Schedule,
           objective: Objective = Objective(), holdout: Sequence[LangPair] = (), holdout_source: str | None = None,
           resamples: int = 1000, seed: int = 0, progress: bool = False,
           log: Callable[[str], None] | None = None, cost: Cost | None = None) -> SearchRun:
    """Nested cross-validation over the language pairs, then the search on every pair (see the
    module's docstring); ``cost`` (:func:`measure`) bounds what each level promotes."""
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    t0 = time.perf_counter()
    book = Book(entries, scorers, lang_pairs, schedule, seed, progress)
    every = list(range(len(entries)))
    lps = list(range(len(lang_pairs)))
    base = baselines(entries)
    last = schedule.levels - 1
    # every fold (each language pair left out) and the search on every pair, level by level together
    trains = [[l for l in lps if l != held] for held in lps] if len(lps) >= 2 else []
    # the published configurations are scored on every segment with the last level (a group picks
    # its best on the pairs a fold sees)
    *traces, final = halve_together(book, every, [*trains, lps], objective, say,
                                    cost.per_score if cost is not None else None,
                                    also=[e for b in base for e in b.members])
    choices = []
    for held, (train, trace) in enumerate(zip(trains, traces)):
        chosen = {"selected": trace.selected}
        for b in base:
            chosen[b.name] = b.members[0] if not b.group else _best(book, b.members, train, last)
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
        run.estimates, run.gains = _intervals(book, folds, resamples, seed)
    if holdout:
        run.holdout, run.holdout_source = _held_out(entries, scorers, run, holdout), holdout_source
    run.seconds = {**{f"level {k + 1}": s for k, s in enumerate(book.seconds)},
                   "total": time.perf_counter() - t0}
    run.notes = dict(book.notes)
    return run


def _best(book: Book, members: Sequence[int], lps: Sequence[int], level: int) -> int:
    means = book.mean_abs_r(list(members), lps, level)
    if not np.isfinite(means).any():
        return members[0]
    return int(members[int(np.nanargmax(means))])


def _intervals(book: Book, folds: Sequence[Fold], resamples: int, seed: int
               ) -> tuple[dict[str, Interval], dict[str, Interval]]:
    """The mean held-out |r| of each compared run over the folds, with a 95% percentile
    interval from resampling every left-out pair's segments (the same resamples for every run:
    the differences are paired)."""
    last = book.schedule.levels - 1
    rng = np.random.default_rng(seed)
    names = list(folds[0].abs_r)
    boot = {name: np.zeros(resamples) for name in names}
    for f in folds:
        lp = next(i for i, p in enumerate(book.lang_pairs) if p.name == f.lang_pair)
        human = book.lang_pairs[lp].human
        idx = rng.integers(0, len(human), size=(resamples, len(human)))
        chosen = {"selected": f.selected, **f.baselines}
        for name in names:
            x = book.scores[(chosen[name], lp, last)][idx]
            boot[name] += np.abs(pearson_rows(x, human[idx])) / len(folds)
    est = {name: float(np.mean([f.abs_r[name] for f in folds])) for name in names}
    estimates = {n: Interval(est[n], *np.nanpercentile(boot[n], [2.5, 97.5]).tolist()) for n in names}
    gains = {n: Interval(est["selected"] - est[n], *np.nanpercentile(boot["selected"] - boot[n], [2.5, 97.5]).tolist())
             for n in names if n != "selected"}
    return estimates, gains


def _held_out(entries: Sequence[Entry], scorers: Sequence[Scorer], run: SearchRun,
              holdout: Sequence[LangPair]) -> list[Fold]:
    """The selection and every single baseline (a group: its best on the search's pairs) on
    every segment of the held-out pairs."""
    chosen = {"selected": run.best}
    for b in run.baselines:
        chosen[b.name] = b.members[0] if not b.group else max(
            b.members, key=lambda e: run.mean_abs_r.get(e, -math.inf) if math.isfinite(run.mean_abs_r.get(e, -1))
            else -math.inf)
    book = Book(list(entries), list(scorers), list(holdout), Schedule((1.0,)))
    book.need((e, l, 0) for e in chosen.values() for l in range(len(holdout)))
    return [Fold(lp.name, run.best, {k: v for k, v in chosen.items() if k != "selected"},
                 {name: float(book.abs_r([e], l, 0)[0]) for name, e in chosen.items()})
            for l, lp in enumerate(holdout)]


# -- preparing and budgeting --------------------------------------------------------------------------
def labels(candidates: Sequence[Candidate], resolved: Sequence[Composition]) -> list[str]:
    """A short label per candidate: its values of the options whose value varies in the space
    (the layer as resolved for the model: ``layer=-3`` of a 6-layer model is ``layer=4``)."""
    values = [{**c.values, **({"layer": r.aggregator.layer} if "layer" in c.values else {})}
              for c, r in zip(candidates, resolved)]
    keys = [k for k in dict.fromkeys(k for v in values for k in v) if len({_text(v.get(k)) for v in values}) > 1]
    return [" ".join(f"{k}={_text(v[k])}" for k in keys if k in v) or c.subspace for c, v in zip(candidates, values)]


def _text(value: Any) -> str:
    if isinstance(value, dict):
        name = value.get("name", "")
        rest = ",".join(f"{k}={_text(v)}" for k, v in value.items() if k != "name")
        return f"{name}({rest})" if rest else str(name)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


def prepare(candidates: Sequence[Candidate], published: Mapping[str, RunSpec] = {}) -> tuple[list[Entry], list[Scorer]]:
    """The entries of the search, one per distinct signature in space order (a published
    configuration the space does not hold is added at the end; one it holds is marked), and a
    scorer per entry (one encoder per encoder spec); every run is checked against its model
    here, before any encoding."""
    names = list(published)
    scorers = build_all([c.spec for c in candidates] + [published[n] for n in names])
    resolved = [s.resolved() for s in scorers]
    entries: list[Entry] = []
    kept: list[Scorer] = []
    seen: dict[str, int] = {}
    items = [(c.values, c.subspace, c.spec) for c in candidates] + [({}, "published", published[n]) for n in names]
    shown = labels(candidates, resolved[:len(candidates)]) + names
    for k, ((values, subspace, spec), scorer, comp, label) in enumerate(zip(items, scorers, resolved, shown)):
        # the same numbers: a default layer and the same layer given are one run
        sig = str(replace(comp, default_of=None).signature(scorer.encoder))
        if sig not in seen:
            seen[sig] = len(entries)
            entries.append(Entry(f"c{len(entries) + 1:03d}", label, subspace, dict(values), spec, comp, sig))
            kept.append(scorer)
        if k >= len(candidates):
            entries[seen[sig]].published.append(names[k - len(candidates)])
    return entries, kept


def challenge_accuracy(entries: Sequence[Entry], scorers: Sequence[Scorer], items: Sequence[Item],
                       category: str) -> None:
    """Set each entry's ``accuracy`` on the challenge items of ``category`` (its primary metric,
    every distinct pair scored once, one engine call per encoder)."""
    if category != ALL and category not in {i.category for i in items}:
        raise ConfigError(f"the challenge set has no category {category!r} (it has: "
                          f"{', '.join(sorted({i.category for i in items}))}, and all)")
    pairs = challenge_pairs(items)
    where = {pair: k for k, pair in enumerate(pairs)}
    good = np.array([where[(i.good, i.refs)] for i in items])
    bad = np.array([where[(i.bad, i.refs)] for i in items])
    texts = Pairs.from_groups([c for c, _ in pairs], [list(r) for _, r in pairs])
    for members in _by_encoder(scorers, range(len(entries))).values():
        first = scorers[members[0]]
        (results,) = score_groups(first.scoring_encoder(), [texts], [[entries[e].composition for e in members]],
                                  first.runtime)
        for e, r in zip(members, results):
            comp = entries[e].composition
            values = scorers[e].reduce(comp, texts, r)[comp.metric].double().numpy()  # as Scorer.score reduces
            entries[e].accuracy = accuracy(items, values[good], values[bad], category)


@dataclass(frozen=True)
class Cost:
    """What a search costs on this machine, measured (:func:`measure`): seconds per text
    encoded (every layer the runs read); for each entry, seconds per segment it scores beyond
    the encoding (``per_score``: a barycenter's is orders of magnitude a greedy one's) and per
    language pair it is scored on at a level, whatever the number of segments (``per_call``:
    fitting its weights, setting up its aligner); and the entries scored on every segment
    whatever the search keeps (``always``: the published configurations, which every fold
    compares with)."""

    per_text: float
    per_score: tuple[float, ...]
    per_call: tuple[float, ...] = ()
    always: tuple[int, ...] = ()

    def levels(self, sizes: Sequence[int], schedule: Schedule, folds_overlap: float = 1.5) -> list[float]:
        """The time of each level of a search with nested cross-validation: each level encodes
        its segments' two texts once; the screen scores every run; each later level the
        survivors of the folds, which overlap (``folds_overlap`` times one search's), taken to be
        the costliest runs that fit the level (the good runs are often the dear ones) and at most
        ``folds_overlap`` times the screen's cost (promotion within it); the last level also the
        ``always`` runs."""
        per_call = self.per_call or (0.0,) * len(self.per_score)
        segments = [sum(_sample_size(n, f) for n in sizes) for f in schedule.fractions]

        def scoring(runs: Iterable[int], level_segments: int) -> list[float]:
            return [self.per_score[e] * level_segments + per_call[e] * len(sizes) for e in runs]

        every = range(len(self.per_score))
        screen = sum(self.per_score) * segments[0]
        out = [sum(scoring(every, segments[0]))]
        for count, level_segments in zip(schedule.survivors(len(self.per_score))[1:], segments[1:]):
            fitting = sorted((c for e, c in zip(every, scoring(every, level_segments))
                              if self.per_score[e] * level_segments <= screen), reverse=True)
            out.append(min(sum(fitting[:math.ceil(count * folds_overlap)]), folds_overlap * screen))
        if schedule.levels > 1:
            out[-1] += sum(scoring(self.always, segments[-1]))
        return [self.per_text * 2 * n + t for n, t in zip(segments, out)]

    def seconds(self, sizes: Sequence[int], schedule: Schedule, folds_overlap: float = 1.5) -> float:
        """The time of the whole search (:meth:`levels`)."""
        return sum(self.levels(sizes, schedule, folds_overlap))


def _sample_size(n: int, fraction: float) -> int:
    return min(n, max(MIN_SEGMENTS, math.ceil(fraction * n)))


def measure(entries: Sequence[Entry], scorers: Sequence[Scorer], lang_pairs: Sequence[LangPair]) -> Cost:
    """The :class:`Cost` of a search on this machine. After a warm-up that loads the models, the
    encoding alone and each kind of run (aligner, n-gram size) are timed on two batches of
    segments and on two segments: the difference is the cost of the others, so what a call costs
    whatever its size (fitting idf, setting up a solver) drops out of the cost per segment, and the
    two segments' time is that cost per call (a search makes one per run, pair and level). A
    search aligns pairs in batches of similar length (see :func:`~alignscore.engine.batch_order`),
    so the two batches are like theirs: each of consecutive segments in order of length, one from
    the shorter half, one from the longer."""
    from ..engine import encode

    first = lang_pairs[0]
    every = range(len(entries))
    warm = LangPair(first.year, first.src, first.tgt, first.references[:2], first.candidates[:2], first.human[:2])
    Book(list(entries), list(scorers), [warm], Schedule((1.0,))).need((e, 0, 0) for e in every)
    by_length = sorted(((lp, i) for lp in lang_pairs for i in range(len(lp))),
                       key=lambda p: len(p[0].references[p[1]].split()) + len(p[0].candidates[p[1]].split()))
    size = scorers[0].runtime.pair_batch_size
    drawn = by_length if len(by_length) <= 2 * size else [
        p for q in (0.25, 0.75) for p in by_length[int(q * len(by_length)) - size // 2:][:size]]
    probes = [LangPair(first.year, first.src, first.tgt, [lp.references[i] for lp, i in part],
                       [lp.candidates[i] for lp, i in part], np.array([lp.human[i] for lp, i in part]))
              for part in (drawn[len(drawn) // 4:][:2], drawn)]
    extra = len(drawn) - 2
    encoding: dict[int, list[float]] = {}
    for key, members in _by_encoder(scorers, every).items():
        scorer = scorers[members[0]]
        for part in probes:
            t = time.perf_counter()
            encode(scorer.scoring_encoder(), Pairs.from_pairs(part.references, part.candidates),
                   [entries[e].composition.aggregator for e in members], scorer.runtime)
            encoding.setdefault(key, []).append(time.perf_counter() - t)
    kinds: dict[tuple[Any, ...], list[int]] = {}
    for e, entry in enumerate(entries):
        aligner = entry.composition.aligner
        kinds.setdefault((id(scorers[e].encoder), type(aligner).__name__, getattr(aligner, "n_gram", None)),
                         []).append(e)
    per_score, per_call = [0.0] * len(entries), [0.0] * len(entries)
    for (encoder, *_), members in kinds.items():
        took = []
        for k, part in enumerate(probes):
            t = time.perf_counter()
            Book(list(entries), list(scorers), [part], Schedule((1.0,))).need((e, 0, 0) for e in members)
            took.append(time.perf_counter() - t - encoding[encoder][k])
        for e in members:
            per_score[e] = max(took[1] - took[0], 0.0) / (extra * len(members))
            per_call[e] = max(took[0], 0.0) / len(members)
    per_text = sum(max(t[1] - t[0], 0.0) for t in encoding.values()) / (2 * extra)
    return Cost(per_text, tuple(per_score), tuple(per_call),
                tuple(e for e, entry in enumerate(entries) if entry.published))


def plan(cost: Cost, sizes: Sequence[int], budget_s: float) -> tuple[Schedule, float]:
    """The schedule that scores the most segments within ``budget_s`` seconds (the full grid
    when it fits), and its estimated time; ConfigError where even the cheapest does not fit."""
    for schedule in SCHEDULES:
        seconds = cost.seconds(sizes, schedule)
        if seconds <= budget_s:
            return schedule, seconds
    cheapest = cost.seconds(sizes, SCHEDULES[-1])
    raise ConfigError(f"the search does not fit --budget {budget_s / 60:g} min: {len(cost.per_score)} runs take "
                      f"about {cheapest / 60:.1f} min even with {SCHEDULES[-1]}, measured here; narrow the space or "
                      "raise --budget")


def beats_p(selected: np.ndarray, reference: np.ndarray, human: np.ndarray) -> float:
    """One-sided Williams p-value that ``selected`` correlates better (|r|) with ``human`` than
    ``reference`` (:func:`~alignscore.evaluation.stats.williams_matrix`)."""
    return float(williams_matrix(np.stack([selected, reference]), human)[0, 1])


__all__ = ["Baseline", "Book", "Cost", "Entry", "Fold", "Interval", "Objective", "SCHEDULES", "Schedule",
           "SearchRun", "Trace", "baselines", "challenge_accuracy", "halve", "halve_together", "labels", "measure",
           "plan", "prepare", "samples", "search"]
