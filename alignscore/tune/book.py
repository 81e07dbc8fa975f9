"""The runs of a search and every score computed for them, each computed once."""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from ..composition import Composition
from ..config import RunSpec
from ..engine import Pairs, score_groups
from ..scorer import Scorer, by_encoder
from ..evaluation.stats import flat_rows, pearson_rows
from ..evaluation.wmt import LangPair
from .schedule import Schedule, samples


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
    _remapped: dict[tuple[int, int], Composition] = field(default_factory=dict)
    _fluency: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._samples = [samples(len(lp), self.schedule.fractions, self.seed + i) for i, lp in
                         enumerate(self.lang_pairs)]
        self.seconds = [0.0] * self.schedule.levels
        self.aligned = [0] * self.schedule.levels

    def sample(self, lp: int, level: int) -> np.ndarray:
        """The segments of pair ``lp`` that ``level`` scores."""
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
            # the planner (config/plan.py, when it lands) is where this grouping belongs
            for members in by_encoder(self.scorers, {e for e, _, _ in at}):
                self._score(level, [w for w in at if w[0] in members], members[0])
            self.seconds[level] += time.perf_counter() - t

    def _score(self, level: int, mine: list[tuple[int, int, int]], first: int) -> None:
        lps = sorted({l for _, l, _ in mine})
        runs = [[e for e, l, _ in mine if l == lp] for lp in lps]
        groups = []
        for lp in lps:
            pair, idx = self.lang_pairs[lp], self.sample(lp, level)
            groups.append(Pairs.from_pairs([pair.references[i] for i in idx], [pair.candidates[i] for i in idx]))
        scorer = self.scorers[first]
        with warnings.catch_warnings(record=True) as caught:  # said once, counted (notes)
            warnings.simplefilter("always")
            results = score_groups(scorer.scoring_encoder(), groups,
                                   [[self.composition(e, lp) for e in es] for es, lp in zip(runs, lps)],
                                   replace(scorer.runtime, progress=self.progress))
        for gist in (_gist(str(w.message)) for w in caught):
            self.notes[gist] = self.notes.get(gist, 0) + 1
        for lp, es, res in zip(lps, runs, results):
            for e, r in zip(es, res):
                comp = self.entries[e].composition
                values = r.metrics[comp.metric].double().numpy()
                if comp.lm is not None:  # XMoverScore's LM term, as Scorer.score mixes it in
                    values = comp.lm.mix(torch.from_numpy(values), torch.from_numpy(
                        self.fluency(e, lp)[self.sample(lp, level)])).numpy()
                self.scores[(e, lp, level)] = values
                self.aligned[level] += len(self.sample(lp, level))

    def composition(self, e: int, lp: int) -> Composition:
        """The composition entry ``e`` scores pair ``lp`` with: the entry's, with the pair's
        remapping where its references are sources (one remapping per source language)."""
        remap, comp = self.lang_pairs[lp].remap, self.entries[e].composition
        if remap is None or comp.remap is remap:
            return comp
        if (e, lp) not in self._remapped:
            self._remapped[(e, lp)] = replace(comp, remap=remap)
        return self._remapped[(e, lp)]

    def fluency(self, e: int, lp: int) -> np.ndarray:
        """The language model's score of every candidate of pair ``lp`` (entry ``e``'s LM term),
        computed once per LM and pair."""
        comp = self.entries[e].composition
        key = (comp.lm.signature() if comp.lm is not None else "", lp)
        if key not in self._fluency:
            values = self.scorers[e].lm_scores(comp, self.lang_pairs[lp].candidates)
            self._fluency[key] = values.numpy() if values is not None else np.zeros(len(self.lang_pairs[lp]))
        return self._fluency[key]

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

    def blocks(self, entries: Sequence[int], lps: Sequence[int], level: int
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per pair of ``lps``: the entries' scores ``[K, n]`` and the human scores ``[n]`` of
        the level's sample (computed, not scored here)."""
        return ([np.stack([self.scores[(e, l, level)] for e in entries]) for l in lps],
                [self.lang_pairs[l].human[self.sample(l, level)] for l in lps])


def _gist(message: str) -> str:
    """A warning without its counts and figures: the same kind of warning from every batch is
    one note."""
    return re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", message.split(";")[0])


__all__ = ["Book", "Entry"]
