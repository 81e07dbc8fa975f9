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
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..composition import Composition, build
from ..encoders.base import Encoder
from ..engine import Pairs, score_groups
from ..errors import ConfigError
from ..runtime import Runtime
from .space import Candidate
from .stats import pearson_rows, williams_matrix
from .wmt import LangPair

# Seconds per unique text of one forward pass for all layers (all-MiniLM-L6-v2 on a loaded 2-core
# CPU, conservative): the encoding side of the estimate; each aligner states its own cost per pair
# (:attr:`~alignscore.aligners.base.Aligner.seconds_per_pair`).
ENCODE_SECONDS_PER_TEXT = 0.005


def aligner_cost(composition: Composition) -> float:
    """Seconds per pair of one run of the composition's aligner, as the aligner states it."""
    return composition.aligner.seconds_per_pair


def aligner_runs(compositions: Sequence[Composition]) -> dict[tuple[str, str, str, str], Composition]:
    """The distinct aligner runs the engine makes per set of pairs: one per (aggregator, token
    roles, weighting, aligner); compositions that differ only in the output read share one."""
    runs: dict[tuple[str, str, str, str], Composition] = {}
    for c in compositions:
        key = (c.aggregator.signature(), c.roles.signature(), c.weighting.signature(), c.aligner.signature())
        runs.setdefault(key, c)
    return runs


def estimate_seconds(compositions: Sequence[Composition], pairs: int, texts: int) -> float:
    """A conservative CPU estimate of scoring ``compositions`` on ``pairs`` pairs over ``texts``
    unique texts: one encoding, plus every distinct aligner run over every pair."""
    align = sum(aligner_cost(c) for c in aligner_runs(compositions).values()) * pairs
    return ENCODE_SECONDS_PER_TEXT * texts + align


@dataclass
class Entry:
    """One composition on the dev data: its ``id``, a short ``label`` (the settings that vary in
    the space), the resolved ``composition``, its ``signature``, its per-pair scores (``scores``,
    one array per language pair, of ``composition.metric``) and Pearson ``r`` per language pair
    (NaN where undefined). ``in_space`` is False for the reference (BERTScore's default) when
    the space does not hold it: it is shown, never selected."""

    id: str
    label: str
    subspace: str
    spec: dict[str, Any]
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


def reference_composition(encoder: Encoder, layer: int | None) -> Composition:
    """BERTScore's default composition for ``encoder``'s model: one layer (``layer``, or the
    model's tuned default), no idf, special tokens match-only, greedy F1."""
    where = "the BERTScore reference" + ("" if layer is not None else " (the model's default layer; give --layer)")
    return build({"layer": layer}, where=where).resolve(encoder)


def labels(candidates: Sequence[Candidate], resolved: Sequence[Composition]) -> list[str]:
    """A short label per candidate: its values of the keys whose value varies in the space (the
    layer as resolved for the model: ``layer=-3`` of a 6-layer model is ``layer=4``)."""
    specs = [{**c.spec, **({"layer": r.aggregator.layers[0]} if "layer" in c.spec else {})}
             for c, r in zip(candidates, resolved)]
    keys = [k for k in dict.fromkeys(k for s in specs for k in s) if len({_text(s.get(k)) for s in specs}) > 1]
    return [" ".join(f"{k}={_text(s[k])}" for k in keys if k in s) or c.subspace for c, s in zip(candidates, specs)]


def _text(value: Any) -> str:
    if isinstance(value, dict):
        name = value.get("name", "")
        rest = ",".join(f"{k}={_text(v)}" for k, v in value.items() if k != "name")
        return f"{name}({rest})" if rest else str(name)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


def tune(encoder: Encoder, candidates: Sequence[Candidate], lang_pairs: Sequence[LangPair], runtime: Runtime,
         reference: Composition, holdout: Sequence[LangPair] = (), holdout_source: str | None = None,
         log: Callable[[str], None] | None = None) -> TuneRun:
    """Score every candidate (resolved for ``encoder``) on every language pair through one
    engine call, select, cross-validate, and with ``holdout`` pairs score the selection and the
    ``reference`` on them (another engine call, both in it)."""
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    seconds: dict[str, float] = {}
    entries: list[Entry] = []
    resolved = [c.resolve(encoder) for c in candidates]
    seen: dict[str, int] = {}
    for cand, comp, label in zip(candidates, resolved, labels(candidates, resolved)):
        sig = comp.signature(encoder)
        if sig in seen:
            continue
        seen[sig] = len(entries)
        entries.append(Entry(f"c{len(entries) + 1:03d}", label, cand.subspace, dict(cand.spec), comp, sig))
    ref_sig = reference.signature(encoder)
    if ref_sig in seen:
        ref_index = seen[ref_sig]
    else:
        ref_index = len(entries)
        entries.append(Entry("ref", "BERTScore default (not in the space)", "-", {}, reference, ref_sig,
                             in_space=False))
    compositions = [e.composition for e in entries]

    t = time.perf_counter()
    say(f"scoring {len(compositions)} composition(s) ({len(aligner_runs(compositions))} aligner runs per "
        f"language pair) on {len(lang_pairs)} language pair(s), one encoding")
    results = score_groups(encoder, [Pairs.from_pairs(lp.references, lp.candidates) for lp in lang_pairs],
                           [compositions] * len(lang_pairs), runtime)
    seconds["score"] = time.perf_counter() - t

    t = time.perf_counter()
    for lp, lp_results in zip(lang_pairs, results):
        block = np.stack([res.metrics[e.composition.metric].double().numpy() for e, res in zip(entries, lp_results)])
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

    run = TuneRun(encoder.name, lang_pairs, entries, best, ref_index, folds, estimate, seconds=seconds)
    if holdout:
        t = time.perf_counter()
        say(f"held-out data: the selection and the BERTScore reference on {len(holdout)} language pair(s)")
        pair = [entries[best].composition, reference]
        scored = score_groups(encoder, [Pairs.from_pairs(lp.references, lp.candidates) for lp in holdout],
                              [pair] * len(holdout), runtime)
        for lp, (sel, ref) in zip(holdout, scored):
            a = sel.metrics[pair[0].metric].double().numpy()
            b = ref.metrics[pair[1].metric].double().numpy()
            ra, rb = np.abs(pearson_rows(np.stack([a, b]), np.stack([lp.human, lp.human])))
            run.holdout.append(HeldOut(lp.name, len(lp), float(ra), float(rb), beats_p(a, b, lp.human)))
        run.holdout_source = holdout_source
        seconds["holdout"] = time.perf_counter() - t
    return run


__all__ = ["ENCODE_SECONDS_PER_TEXT", "Entry", "Fold", "HeldOut", "TuneRun",
           "aligner_cost", "aligner_runs", "beats_p", "cross_validate", "estimate_seconds", "labels",
           "reference_composition", "select", "tune"]
