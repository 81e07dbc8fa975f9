"""What a search costs on this machine: the model of its time (:class:`Cost`) and the probe
that measures it (:func:`measure`), in a bounded time, repeated and read at a low quantile so
that other work on the machine does not inflate it."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from ..engine import Pairs, encode
from ..scorer import Scorer, by_encoder
from ..evaluation.wmt import LangPair
from .book import Book, Entry
from .schedule import Schedule, sample_size

PROBE_QUANTILE = 0.25  # of the repeated timings: a low one, the machine's speed without the others' load
PROBE_ROUNDS = 5  # at most, time allowing
PER_KIND = 4  # runs timed per kind of run (aligner), spread over its members
MIN_PROBE = 8  # the fewest segments of the larger probe of a kind


@dataclass(frozen=True)
class Cost:
    """What a search costs: seconds per text encoded (every layer the runs read); for each
    entry, seconds per segment it scores beyond the encoding (``per_score``: a barycenter's is
    orders of magnitude a greedy one's) and per language pair it is scored on at a level,
    whatever the number of segments (``per_call``: fitting its weights, setting up its
    aligner); and the entries scored on every segment whatever the search keeps (``always``:
    the published configurations, which every fold compares with)."""

    per_text: float
    per_score: tuple[float, ...]
    per_call: tuple[float, ...] = ()
    always: tuple[int, ...] = ()

    def parts(self, sizes: Sequence[int], schedule: Schedule, folds_overlap: float = 1.5
              ) -> list[tuple[float, float]]:
        """Each level's encoding and scoring seconds in a search with nested cross-validation.

        Each level encodes its segments' two texts once; the screen scores every run; each later
        level the survivors of the folds, which overlap (``folds_overlap`` times one search's),
        taken to be the costliest runs that fit the level (the good runs are often the dear
        ones) and at most ``folds_overlap`` times the screen's cost (promotion within it); the
        last level also the ``always`` runs.
        """
        per_call = self.per_call or (0.0,) * len(self.per_score)
        segments = [sum(sample_size(n, f) for n in sizes) for f in schedule.fractions]

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
        return [(self.per_text * 2 * n, t) for n, t in zip(segments, out)]

    def levels(self, sizes: Sequence[int], schedule: Schedule, folds_overlap: float = 1.5) -> list[float]:
        """The time of each level (:meth:`parts`, encoding and scoring together)."""
        return [e + s for e, s in self.parts(sizes, schedule, folds_overlap)]

    def seconds(self, sizes: Sequence[int], schedule: Schedule, folds_overlap: float = 1.5) -> float:
        """The time of the whole search (:meth:`levels`)."""
        return sum(self.levels(sizes, schedule, folds_overlap))

    def only(self, runs: Sequence[int]) -> "Cost":
        """The cost of a search of ``runs`` alone (renumbered in their order)."""
        where = {e: k for k, e in enumerate(runs)}
        return Cost(self.per_text, tuple(self.per_score[e] for e in runs),
                    tuple(self.per_call[e] for e in runs) if self.per_call else (),
                    tuple(where[e] for e in self.always if e in where))


@dataclass(frozen=True)
class Probe:
    """A measured :class:`Cost`, the ``seconds`` the probe took, the ``rounds`` it timed and the
    torch ``threads`` it chose (:func:`fastest_threads`), which the cost holds for."""

    cost: Cost
    seconds: float
    rounds: int
    threads: int = 1


def fastest_threads(run: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> int:
    """Time ``run`` with torch's threads and with one, twice each in turn, and leave torch on the
    faster (the smaller where equal).

    On a machine whose cores other work keeps busy, threads that wait for each other at every
    operation's end wait for a time slice each time: one thread is then several times faster
    than all of them, where on a quiet machine it is slower. Which holds is measured, not guessed.

    Parameters
    ----------
    run : callable
        The work timed (encoding a batch).
    clock : callable
        The clock.

    Returns
    -------
    int
        The threads torch is left on.
    """
    most = torch.get_num_threads()
    if most <= 1:
        return most
    best: dict[int, float] = {}
    for n in (most, 1, most, 1):
        torch.set_num_threads(n)
        t = clock()
        run()
        best[n] = min(best.get(n, math.inf), clock() - t)
    chosen = 1 if best[1] <= best[most] else most
    torch.set_num_threads(chosen)
    return chosen


def measure(entries: Sequence[Entry], scorers: Sequence[Scorer], lang_pairs: Sequence[LangPair],
            seconds: float = 60.0, progress: bool = False, clock: Callable[[], float] = time.perf_counter) -> Probe:
    """The :class:`Cost` of a search on this machine, measured within about ``seconds``.

    After a warm-up that loads the models and chooses torch's threads (:func:`fastest_threads`,
    left set: the search runs on them), the encoding alone and a few runs of each kind
    (aligner: :data:`PER_KIND`, spread over its runs) are timed on two batches of segments and on
    two segments: the difference is the cost of the others, so what a call costs whatever its
    size (fitting idf, setting up a solver) drops out of the cost per segment, and the two
    segments' time is that cost per call. A search aligns pairs in batches of similar length, so
    the two batches are like theirs: each of consecutive segments in order of length, one from the
    shorter half, one from the longer; a kind whose two segments took long is timed on fewer of
    them (at least :data:`MIN_PROBE`), so that the first round fits the probe's time. The round
    is repeated while the time allows (at most :data:`PROBE_ROUNDS`) and each timing read at a low
    quantile (:data:`PROBE_QUANTILE`): load from other work only ever slows a round.

    Parameters
    ----------
    entries, scorers : sequence
        The runs of the search and their scorers.
    lang_pairs : sequence of LangPair
        The data it searches.
    seconds : float
        The time the probe may take (a first round is always timed whole).
    progress : bool
        A progress bar on stderr from the start.
    clock : callable
        The clock.

    Returns
    -------
    Probe
    """
    t0 = clock()
    bar = tqdm(total=max(1, round(seconds)), desc="[tune] measuring the cost", unit="s", file=sys.stderr,
               disable=not progress, leave=False, bar_format="{desc}: {n:.0f}/{total} s {bar}")
    tick = lambda: bar.update(min(clock() - t0, bar.total) - bar.n)  # noqa: E731
    kinds = _kinds(entries, scorers)
    probes = _probes(lang_pairs, scorers[0].runtime.pair_batch_size)
    timed = [e for reps in kinds.values() for e in reps[1]]
    for members in by_encoder(scorers, range(len(entries))):  # warm-up: the models loaded
        encode(scorers[members[0]].scoring_encoder(), Pairs.from_pairs(probes[0].references, probes[0].candidates),
               [entries[e].composition.aggregator for e in members], scorers[members[0]].runtime)
    Book(list(entries), list(scorers), [probes[0]], Schedule((1.0,))).need((e, 0, 0) for e in timed)
    first = by_encoder(scorers, range(len(entries)))[0]
    threads = fastest_threads(lambda: encode(
        scorers[first[0]].scoring_encoder(), Pairs.from_pairs(probes[1].references, probes[1].candidates),
        [entries[e].composition.aggregator for e in first], scorers[first[0]].runtime), clock)
    tick()
    encoding: dict[int, list[list[float]]] = {}
    scoring: dict[tuple[Any, ...], list[list[float]]] = {}
    batch: dict[tuple[Any, ...], int] = {}  # each kind's larger probe, sized in the first round
    rounds = 0
    while rounds < PROBE_ROUNDS:
        started = clock()
        for members in by_encoder(scorers, range(len(entries))):
            scorer = scorers[members[0]]
            key = id(scorer.encoder)
            for k, part in enumerate(probes):
                t = clock()
                encode(scorer.scoring_encoder(), Pairs.from_pairs(part.references, part.candidates),
                       [entries[e].composition.aggregator for e in members], scorer.runtime)
                encoding.setdefault(key, [[], []])[k].append(clock() - t)
                tick()
        for kind, (_, reps) in kinds.items():
            t = clock()
            Book(list(entries), list(scorers), [probes[0]], Schedule((1.0,))).need((e, 0, 0) for e in reps)
            scoring.setdefault(kind, [[], []])[0].append(clock() - t - encoding[kind[0]][0][-1])
            tick()
        if not batch:  # sized so that the first round fits what the probe's time leaves
            left = max(seconds - (clock() - t0), 0.0) / len(kinds)
            for kind, times in scoring.items():
                per_segment = max(times[0][0], 1e-9) / len(probes[0])  # at most: the call's own cost is in it
                batch[kind] = int(min(len(probes[1]), max(MIN_PROBE, len(probes[0]) + left / per_segment)))
        for kind, (_, reps) in kinds.items():
            small, large = (encoding[kind[0]][k][-1] for k in (0, 1))
            share = (batch[kind] - len(probes[0])) / max(len(probes[1]) - len(probes[0]), 1)
            t = clock()
            Book(list(entries), list(scorers), [_halves(probes[1], batch[kind])], Schedule((1.0,))).need(
                (e, 0, 0) for e in reps)
            scoring[kind][1].append(clock() - t - (small + (large - small) * share))
            tick()
        rounds += 1
        if clock() - t0 + (clock() - started) > seconds:
            break
    bar.close()
    low = lambda times: float(np.quantile(times, PROBE_QUANTILE))  # noqa: E731
    extra = len(probes[1]) - len(probes[0])
    per_score, per_call = [0.0] * len(entries), [0.0] * len(entries)
    for kind, (members, reps) in kinds.items():
        small, large = (low(t) for t in scoring[kind])
        # each run timed is one distinct alignment of the kind; runs that differ only in the
        # output read share one
        shared = len({_work(entries[e]) for e in members}) / len(members)
        for e in members:
            per_score[e] = max(large - small, 0.0) / (max(batch[kind] - len(probes[0]), 1) * len(reps)) * shared
            per_call[e] = max(small, 0.0) / len(reps) * shared
    per_text = sum(max(low(t[1]) - low(t[0]), 0.0) for t in encoding.values()) / (2 * extra)
    cost = Cost(per_text, tuple(per_score), tuple(per_call), tuple(e for e, x in enumerate(entries) if x.published))
    return Probe(cost, clock() - t0, rounds, threads)


def _halves(batch: LangPair, n: int) -> LangPair:
    """``n`` segments of the two halves of ``batch`` (the shorter and the longer), half from each."""
    half = len(batch) // 2
    idx = list(range(min(n // 2, half))) + list(range(half, half + n - min(n // 2, half)))[:n]
    return LangPair(batch.year, batch.src, batch.tgt, [batch.references[i] for i in idx],
                    [batch.candidates[i] for i in idx], batch.human[idx], remap=batch.remap)


def _kinds(entries: Sequence[Entry], scorers: Sequence[Scorer]) -> dict[tuple[Any, ...], tuple[list[int], list[int]]]:
    """Per encoder and aligner: its runs and the :data:`PER_KIND` timed (spread over them, one
    per distinct alignment where it can)."""
    kinds: dict[tuple[Any, ...], list[int]] = {}
    for e, entry in enumerate(entries):
        kinds.setdefault((id(scorers[e].encoder), entry.composition.aligner.signature()), []).append(e)
    out = {}
    for kind, members in kinds.items():
        seen: dict[Any, int] = {}
        for e in members:
            seen.setdefault(_work(entries[e]), e)
        distinct = list(seen.values())
        step = max(1, len(distinct) // PER_KIND)
        out[kind] = (members, distinct[::step][:PER_KIND])
    return out


def _work(entry: Entry) -> str:
    """What the engine computes for a run whatever output it reads."""
    return repr(replace(entry.composition, metric=None))


def _probes(lang_pairs: Sequence[LangPair], size: int) -> list[LangPair]:
    """Two segments, and two batches of ``size // 2`` consecutive segments in order of length,
    one from the shorter half of every pair's segments, one from the longer."""
    first = lang_pairs[0]
    by_length = sorted(((lp, i) for lp in lang_pairs for i in range(len(lp))),
                       key=lambda p: len(p[0].references[p[1]].split()) + len(p[0].candidates[p[1]].split()))
    drawn = by_length if len(by_length) <= 2 * size else [
        p for q in (0.25, 0.75) for p in by_length[int(q * len(by_length)) - size // 2:][:size]]
    return [LangPair(first.year, first.src, first.tgt, [lp.references[i] for lp, i in part],
                     [lp.candidates[i] for lp, i in part], np.array([lp.human[i] for lp, i in part]),
                     remap=first.remap)  # the cost of a remapping is the same for every language
            for part in (drawn[len(drawn) // 4:][:2], drawn)]


__all__ = ["Cost", "MIN_PROBE", "PER_KIND", "PROBE_QUANTILE", "PROBE_ROUNDS", "Probe", "fastest_threads", "measure"]
