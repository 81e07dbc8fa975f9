"""Composition search (``alignscore tune``): score every candidate of a space on the human
judgments of several language pairs through one engine call, select by mean |Pearson r|, and
estimate how the choice generalises by leave-one-language-pair-out cross-validation.

For candidates ``k`` and language pairs ``l`` with ``R[k, l] = |r|`` (Pearson r of the
composition's metric with the human scores of pair ``l``):

- selection: ``k* = argmax_k mean_l R[k, l]`` (ties: the first in space order);
- fold ``l``: ``k_l = argmax_k mean_{m != l} R[k, m]`` (selected without pair ``l``), scored on
  the left-out pair, ``R[k_l, l]``;
- the cross-validated estimate is ``mean_l R[k_l, l]``: the |r| the whole procedure (search,
  then select) gets on a language pair it never saw.

Candidates whose correlation is undefined on some pair (constant scores) are never selected.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..composition import Composition
from ..config import RunSpec, build_all
from ..engine import Pairs, score_groups
from ..errors import ConfigError
from ..scorer import Scorer
from .space import Candidate
from .stats import pearson_rows, williams_matrix
from .wmt import LangPair


def aligner_runs(compositions: Sequence[Composition]) -> dict[tuple[str, str, str, str], Composition]:
    """The distinct aligner runs the engine makes per set of pairs: one per (aggregator, token
    roles, weighting, aligner); compositions that differ only in the output read share one."""
    runs: dict[tuple[str, str, str, str], Composition] = {}
    for c in compositions:
        key = (c.aggregator.signature(), c.roles.signature(), c.weighting.signature(), c.aligner.signature())
        runs.setdefault(key, c)
    return runs


def by_encoder(scorers: Sequence[Scorer]) -> dict[int, list[int]]:
    """Indices of ``scorers`` grouped by the encoder object they share (one encoding each)."""
    groups: dict[int, list[int]] = {}
    for i, scorer in enumerate(scorers):
        groups.setdefault(id(scorer.encoder), []).append(i)
    return groups


def score_all(scorers: Sequence[Scorer], compositions: Sequence[Composition], lang_pairs: Sequence[LangPair],
              progress: bool = False) -> list[list[np.ndarray]]:
    """``out[k][l]``: the scores of composition ``k`` (its metric) on language pair ``l``; one
    engine call per encoder, every language pair's texts encoded once."""
    out: list[list[np.ndarray]] = [[] for _ in scorers]
    pairs = [Pairs.from_pairs(lp.references, lp.candidates) for lp in lang_pairs]
    for members in by_encoder(scorers).values():
        first = scorers[members[0]]
        runtime = replace(first.runtime, progress=progress)
        results = score_groups(first.scoring_encoder(), pairs, [[compositions[k] for k in members]] * len(pairs),
                               runtime)
        for lp_results in results:
            for k, res in zip(members, lp_results):
                out[k].append(res.metrics[compositions[k].metric].double().numpy())
    return out


def estimate_seconds(scorers: Sequence[Scorer], compositions: Sequence[Composition],
                     lang_pairs: Sequence[LangPair], sample: int = 32) -> float:
    """Seconds that scoring every composition on every pair of ``lang_pairs`` will take on this
    machine, measured: after a warm-up (the models load), the compositions score ``sample``
    pairs of the first language pair, and the time grows with the number of pairs."""
    first = lang_pairs[0]
    n = min(sample, len(first))
    warm = LangPair(first.year, first.src, first.tgt, first.references[:2], first.candidates[:2], first.human[:2])
    score_all(scorers, compositions, [warm])
    probe = LangPair(first.year, first.src, first.tgt, first.references[-n:], first.candidates[-n:],
                     first.human[-n:])
    t = time.perf_counter()
    score_all(scorers, compositions, [probe])
    return (time.perf_counter() - t) * sum(len(lp) for lp in lang_pairs) / max(n, 1)


@dataclass
class Entry:
    """One composition on the dev data: its ``id``, a short ``label`` (the settings that vary in
    the space), the ``values`` the space gave it, its compiled run (``spec``: what best.toml
    writes), the resolved ``composition``, its ``signature``, its per-pair scores (``scores``,
    one array per language pair, of ``composition.metric``) and Pearson ``r`` per language pair
    (NaN where undefined). ``in_space`` is False for the reference (BERTScore's default) when
    the space does not hold it: it is shown, never selected."""

    id: str
    label: str
    subspace: str
    values: dict[str, Any]
    spec: RunSpec
    composition: Composition
    signature: str
    scores: list[np.ndarray] = field(default_factory=list, repr=False)
    r: np.ndarray = field(default_factory=lambda: np.zeros(0))
    in_space: bool = True

    @property
    def abs_r(self) -> np.ndarray:
        return np.abs(self.r)

    @property
    def average(self) -> float:
        """Mean |r| over the language pairs (NaN if undefined on any)."""
        return float(self.abs_r.mean()) if len(self.r) else math.nan


@dataclass(frozen=True)
class Fold:
    """Fold ``lang_pair`` of the cross-validation: the candidate selected on the other pairs
    (index into the entries), its |r| on the left-out pair, the reference's |r| there and the
    one-sided Williams p-value that the selection beats the reference on that pair."""

    lang_pair: str
    selected: int
    heldout: float
    reference: float
    williams_p: float


@dataclass(frozen=True)
class HeldOut:
    """A language pair of the ``--holdout`` data: |r| of the selection and of the reference,
    and the one-sided Williams p-value that the selection is better."""

    lang_pair: str
    n: int
    selected: float
    reference: float
    williams_p: float


def select(abs_r: np.ndarray, eligible: np.ndarray, columns: Sequence[int] | None = None) -> int:
    """The row of ``abs_r [K, L]`` with the highest mean over ``columns`` (default: all) among
    ``eligible [K]`` rows with a defined value in every column; ties go to the first row."""
    cols = list(range(abs_r.shape[1])) if columns is None else list(columns)
    means = abs_r[:, cols].mean(axis=1)
    means = np.where(eligible & np.isfinite(means), means, -np.inf)
    if not np.isfinite(means).any():
        raise ConfigError("no candidate has a defined correlation on every language pair")
    return int(np.argmax(means))


def cross_validate(abs_r: np.ndarray, eligible: np.ndarray) -> list[tuple[int, float]]:
    """Leave-one-column-out: for each column ``l``, ``(k_l, abs_r[k_l, l])`` with ``k_l``
    selected (:func:`select`) on the other columns. Needs at least two columns."""
    n = abs_r.shape[1]
    if n < 2:
        raise ConfigError("cross-validation leaves one language pair out: it needs at least two")
    out = []
    for left in range(n):
        k = select(abs_r, eligible, [m for m in range(n) if m != left])
        out.append((k, float(abs_r[k, left])))
    return out


def beats_p(selected: np.ndarray, reference: np.ndarray, human: np.ndarray) -> float:
    """One-sided Williams p-value that ``selected`` correlates better (|r|) with ``human`` than
    ``reference`` (:func:`~alignscore.evaluation.stats.williams_matrix`)."""
    return float(williams_matrix(np.stack([selected, reference]), human)[0, 1])


@dataclass
class TuneRun:
    """What :func:`tune` found: the ``entries`` (space order; the reference last when it is
    not in the space), the ``best`` entry, the cross-validation ``folds`` and ``estimate``,
    the ``reference`` entry (BERTScore's default composition), the ``holdout`` comparison and
    the time per stage."""

    model: str
    lang_pairs: list[LangPair]
    entries: list[Entry]
    best: int
    reference: int
    folds: list[Fold]
    estimate: float | None
    holdout: list[HeldOut] = field(default_factory=list)
    holdout_source: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ranking(self) -> list[int]:
        """Entry indices by mean |r|, best first (undefined last; ties in space order)."""
        return sorted(range(len(self.entries)),
                      key=lambda i: (-self.entries[i].average if math.isfinite(self.entries[i].average)
                                     else math.inf, i))


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


def prepare(candidates: Sequence[Candidate], reference: RunSpec) -> tuple[list[Entry], int, list[Scorer]]:
    """The entries of the search (one per distinct signature, space order), the index of the
    reference run (appended when the space does not hold it) and a scorer per entry (one
    encoder per encoder spec); every run is checked against its model here, before any
    encoding."""
    scorers = build_all([c.spec for c in candidates] + [reference])
    resolved = [s.resolved() for s in scorers]
    entries: list[Entry] = []
    kept: list[Scorer] = []
    seen: dict[str, int] = {}
    for cand, scorer, comp, label in zip(candidates, scorers, resolved, labels(candidates, resolved[:-1])):
        sig = str(comp.signature(scorer.encoder))
        if sig in seen:
            continue
        seen[sig] = len(entries)
        entries.append(Entry(f"c{len(entries) + 1:03d}", label, cand.subspace, dict(cand.values), cand.spec, comp, sig))
        kept.append(scorer)
    ref_sig = str(resolved[-1].signature(scorers[-1].encoder))
    if ref_sig in seen:
        return entries, seen[ref_sig], kept
    entries.append(Entry("ref", "the reference (not in the space)", "-", {}, reference, resolved[-1], ref_sig,
                         in_space=False))
    return entries, len(entries) - 1, kept + [scorers[-1]]


def tune(entries: list[Entry], ref_index: int, scorers: Sequence[Scorer], lang_pairs: Sequence[LangPair],
         holdout: Sequence[LangPair] = (), holdout_source: str | None = None, progress: bool = False,
         log: Callable[[str], None] | None = None) -> TuneRun:
    """Score every entry (:func:`prepare`) on every language pair (one engine call per
    encoder), select, cross-validate, and with ``holdout`` pairs score the selection and the
    reference on them."""
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    seconds: dict[str, float] = {}
    compositions = [e.composition for e in entries]
    t = time.perf_counter()
    say(f"scoring {len(compositions)} composition(s) ({len(aligner_runs(compositions))} aligner runs per "
        f"language pair) on {len(lang_pairs)} language pair(s), one encoding per encoder")
    scores = score_all(scorers, compositions, lang_pairs, progress)
    seconds["score"] = time.perf_counter() - t

    t = time.perf_counter()
    for l, lp in enumerate(lang_pairs):
        block = np.stack([scores[k][l] for k in range(len(entries))])
        rs = pearson_rows(block, np.broadcast_to(lp.human, block.shape))
        for e, row, r in zip(entries, block, rs):
            e.scores.append(row)
            e.r = np.append(e.r, r)
    abs_r = np.stack([e.abs_r for e in entries])
    # a composition whose correlation is undefined on any pair is never selected, in any fold
    eligible = np.array([e.in_space for e in entries]) & np.isfinite(abs_r).all(axis=1)
    best = select(abs_r, eligible)
    folds: list[Fold] = []
    estimate = None
    if len(lang_pairs) >= 2:
        for l, (k, held) in enumerate(cross_validate(abs_r, eligible)):
            lp = lang_pairs[l]
            p = beats_p(entries[k].scores[l], entries[ref_index].scores[l], lp.human)
            folds.append(Fold(lp.name, k, held, float(abs_r[ref_index, l]), p))
        estimate = float(np.mean([f.heldout for f in folds]))
    seconds["meta-evaluate"] = time.perf_counter() - t

    models = sorted({e.spec.encoder.model for e in entries})
    run = TuneRun(", ".join(models), lang_pairs, entries, best, ref_index, folds, estimate, seconds=seconds)
    if holdout:
        t = time.perf_counter()
        say(f"held-out data: the selection and the reference on {len(holdout)} language pair(s)")
        chosen = [best, ref_index]
        held = score_all([scorers[k] for k in chosen], [compositions[k] for k in chosen], holdout, progress)
        for l, lp in enumerate(holdout):
            a, b = held[0][l], held[1][l]
            ra, rb = np.abs(pearson_rows(np.stack([a, b]), np.stack([lp.human, lp.human])))
            run.holdout.append(HeldOut(lp.name, len(lp), float(ra), float(rb), beats_p(a, b, lp.human)))
        run.holdout_source = holdout_source
        seconds["holdout"] = time.perf_counter() - t
    return run


__all__ = ["Entry", "Fold", "HeldOut", "TuneRun", "aligner_runs", "beats_p", "by_encoder", "cross_validate",
           "estimate_seconds", "labels", "prepare", "score_all", "select", "tune"]
