"""Why a score is what it is: the alignment behind each (candidate, reference) pair.

:func:`explain` runs a :class:`~alignscore.scorer.Scorer`'s composition through the engine
(:mod:`alignscore.engine`: tokenize, weigh, token roles, encode, the same padded
:class:`~alignscore.aligners.base.PairBatch`) and asks its aligner for
:meth:`~alignscore.aligners.base.Aligner.alignment` instead of bare scores.
For each pair it returns the tokens on each side, their normalised masses, the similarity (greedy)
or cost (optimal transport) matrix, the greedy matches or the transport plan, and each unit's
contribution to each metric. Contributions sum to the pair's score exactly, the score that
:meth:`Scorer.score` reports for that pair (rescaled too, when the scorer rescales; see
:func:`rescale_contributions`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, Sequence

import torch

from ._ops import normalise_mass
from .aligners.base import Alignment
from .rescale import rescale
from .composition import Composition
from .encoders.base import Encoder
from .engine import (AlignerInputs, Encoded, Pairs, PairScores, aligner_inputs, empty_reasons, encode, norms_read,
                     pair_batches)
from .runtime import Runtime
from .scores import check_references, reduce
from .signature import Signature


class Explainable(Protocol):
    """What :func:`explain` uses of a :class:`~alignscore.scorer.Scorer`."""

    encoder: Encoder

    @property
    def runtime(self) -> Runtime: ...

    def resolved(self) -> Composition: ...

    def scoring_encoder(self) -> Encoder: ...

    def signature(self, sources: bool = False) -> Signature: ...


@dataclass
class PairAlignment:
    """One (candidate, reference) pair, explained. Tensors are on the CPU.

    ``ref_tokens`` / ``cand_tokens`` are every token of each text as the tokenizer wrote it
    (special tokens included); ``ref_matchable`` / ``cand_matchable`` mark those that may be
    aligned to. The aligner works on *units*: tokens, or n-gram windows for n-gram optimal
    transport, in which case ``ref_units [Ur, Tr]`` / ``cand_units [Uc, Tc]`` (0/1) say which
    tokens form each unit (``None`` when units are tokens).

    ``ref_mass [Ur]`` / ``cand_mass [Uc]`` are the units' normalised masses (each side sums to 1,
    or to 0 for a side with nothing to align); ``matrix [Ur, Uc]`` holds similarities
    (``kind == "similarity"``, NaN where an entry cannot be matched) or costs
    (``kind == "cost"``); ``flows`` the greedy matches (``"recall"``: each reference unit's best
    candidate unit, carrying its mass; ``"precision"``: the same from the candidate side) or the
    optimal-transport plan (``"transport"``). ``contributions[m] = (ref [Ur], cand [Uc])`` and
    ``ref.sum() + cand.sum() == scores[m]``; ``raw_scores`` are the aligner's scores before
    baseline rescaling (equal to ``scores`` when the scorer does not rescale).
    """

    reference: str
    candidate: str
    ref_tokens: list[str]
    cand_tokens: list[str]
    ref_matchable: torch.Tensor
    cand_matchable: torch.Tensor
    kind: str
    matrix: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    flows: dict[str, torch.Tensor]
    contributions: dict[str, tuple[torch.Tensor, torch.Tensor]]
    scores: dict[str, float]
    raw_scores: dict[str, float]
    ref_units: torch.Tensor | None = None
    cand_units: torch.Tensor | None = None

    @property
    def ref_labels(self) -> list[str]:
        """One label per reference unit (the token, or an n-gram's tokens joined)."""
        return unit_labels(self.ref_tokens, self.ref_units)

    @property
    def cand_labels(self) -> list[str]:
        """One label per candidate unit."""
        return unit_labels(self.cand_tokens, self.cand_units)


@dataclass
class Explanation:
    """One candidate against its reference(s).

    ``pairs[k]`` explains the candidate against its k-th reference; ``scores`` are the
    candidate's scores exactly as :meth:`Scorer.score` reports them (several references reduced
    by the scorer's ``multi_ref``, rescaled when it rescales); ``best_reference`` is the index of
    the reference with the best primary score (``Scores.best_reference``).
    """

    candidate: str
    references: list[str]
    pairs: list[PairAlignment]
    scores: dict[str, float]
    best_reference: int
    primary: str
    signature: Signature

    @property
    def best(self) -> PairAlignment:
        """The pair with the best reference."""
        return self.pairs[self.best_reference]


def explain(scorer: Explainable, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]],
            batch_size: int | None = None) -> list[Explanation]:
    """Explain every candidate's score against its reference(s); arguments as for
    :meth:`Scorer.score`. Pairs are aligned through the engine, ``batch_size`` at a time
    (default: the scorer's pair batches).

    Raises:
        InputError: as :meth:`Scorer.score` does for bad input.
        NotImplementedError: the aligner cannot explain its alignments.
    """
    cands, groups = check_references(cands, refs)
    composition = scorer.resolved()
    encoder, runtime = scorer.scoring_encoder(), scorer.runtime
    if batch_size is not None:
        runtime = replace(runtime, pair_batch_size=batch_size)
    encoded = encode(encoder, Pairs.from_groups(cands, groups), [composition.aggregator], runtime,
                     norms=norms_read([composition]))
    (inputs,) = aligner_inputs(encoded, [composition], encoder)
    values = composition.baseline_values()
    n_pairs = len(encoded.pairs)
    raw: dict[str, torch.Tensor] = {}
    pairs: list[PairAlignment] = []
    for sel, batch in pair_batches(encoded, inputs, runtime):
        alignment = composition.aligner.alignment(batch)
        for name, value in alignment.scores.items():
            raw.setdefault(name, torch.empty(n_pairs, dtype=value.dtype))[sel] = value.detach().cpu()
        pairs += _split(encoded, inputs, sel, batch.ref_mass, batch.cand_mass, alignment, values)
    reduced = reduce(PairScores(raw, empty_reasons(encoded, inputs)), encoded.pairs, composition,
                     scorer.signature(), name=runtime.name)
    offsets = encoded.pairs.groups.tolist()
    out = []
    for i, cand in enumerate(cands):
        group = pairs[offsets[i]:offsets[i + 1]]
        out.append(Explanation(
            candidate=cand, references=[p.reference for p in group], pairs=group,
            scores={k: float(v[i]) for k, v in reduced.metrics.items()},
            best_reference=int(reduced.best_reference[i]), primary=composition.metric,
            signature=reduced.signature,
        ))
    return out


def unit_masses(mass: torch.Tensor, units: torch.Tensor | None) -> torch.Tensor:
    """Normalised unit masses ``[B, U]`` from token masses ``[B, T]``: a unit's mass is the sum
    of its tokens' masses (``units [B, U, T]``, 0/1), then each side is normalised to 1."""
    if units is not None:
        mass = torch.bmm(units.to(mass.dtype), mass.unsqueeze(-1)).squeeze(-1)
    return normalise_mass(mass)


def rescale_contributions(ref: torch.Tensor, cand: torch.Tensor, ref_w: torch.Tensor, cand_w: torch.Tensor,
                          b: float, ref_share: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Contributions to the rescaled score ``x' = (x - b) / (1 - b)``.

    With contributions ``c``, normalised masses ``w`` (each side sums to 1) and ``alpha`` the
    reference side's share of the offset (``ref_share [B]``; the candidate side takes
    ``1 - alpha``)::

        c'_i = (c_i - b alpha w_i) / (1 - b)              (reference units)
        c'_j = (c_j - b (1 - alpha) w_j) / (1 - b)        (candidate units)

    so that ``sum c' = (x - b) / (1 - b)``. For greedy precision (alpha = 0) this is
    ``w_j (s_j - b) / (1 - b)``: each token's best similarity rescaled, weighed by its mass.
    """
    a = ref_share.unsqueeze(-1).to(ref.dtype)
    return (ref - b * a * ref_w) / (1 - b), (cand - b * (1 - a) * cand_w) / (1 - b)


def _ref_shares(contributions: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The reference side's share of each metric's rescaling offset, per pair: 1 when only the
    reference units contribute (recall), 0 when only the candidate units do (precision), 1/2
    when both do (F1, transport scores). Decided over the whole batch, so it is a property of
    the metric, not of one pair's numbers."""
    out = {}
    for name, (ref, cand) in contributions.items():
        r_any, c_any = bool((ref != 0).any()), bool((cand != 0).any())
        share = 1.0 if r_any and not c_any else 0.0 if c_any and not r_any else 0.5
        out[name] = torch.full((ref.shape[0],), share, dtype=ref.dtype, device=ref.device)
    return out


def _split(encoded: Encoded, inputs: AlignerInputs, sel: torch.Tensor, ref_mass: torch.Tensor,
           cand_mass: torch.Tensor, alignment: Alignment, baseline: dict[str, float] | None) -> list[PairAlignment]:
    """Cut a batch's :class:`Alignment` into one :class:`PairAlignment` per pair (padding
    removed), rescaling scores and contributions when there is a baseline."""
    r_w = unit_masses(ref_mass, alignment.ref_units)
    c_w = unit_masses(cand_mass, alignment.cand_units)
    contributions = dict(alignment.contributions)
    scores = dict(alignment.scores)
    if baseline is not None:
        shares = _ref_shares(contributions)
        contributions = {m: rescale_contributions(r, c, r_w, c_w, baseline[m], shares[m]) if m in baseline else (r, c)
                         for m, (r, c) in contributions.items()}
        scores = rescale(scores, baseline)
    table, p = encoded.table, encoded.pairs
    offsets = table.offsets.tolist()
    out = []
    for k, pair in enumerate(sel.tolist()):
        ri, ci = int(p.ref[pair]), int(p.cand[pair])
        tr, tc = offsets[ri + 1] - offsets[ri], offsets[ci + 1] - offsets[ci]
        r_units = c_units = None
        if alignment.ref_units is not None and alignment.cand_units is not None:
            r_units = alignment.ref_units[k][:, :tr]
            c_units = alignment.cand_units[k][:, :tc]
            r_keep, c_keep = r_units.bool().any(-1), c_units.bool().any(-1)
            r_units, c_units = r_units[r_keep].cpu(), c_units[c_keep].cpu()
        else:
            r_keep, c_keep = slice(0, tr), slice(0, tc)

        def cut(t: torch.Tensor) -> torch.Tensor:  # [Ur, Uc] of pair k, padding removed
            return t[k][r_keep][:, c_keep].detach().cpu()

        out.append(PairAlignment(
            reference=p.texts[ri], candidate=p.texts[ci],
            ref_tokens=table.tokens[offsets[ri]:offsets[ri + 1]],
            cand_tokens=table.tokens[offsets[ci]:offsets[ci + 1]],
            ref_matchable=inputs.matchable[offsets[ri]:offsets[ri + 1]].cpu(),
            cand_matchable=inputs.matchable[offsets[ci]:offsets[ci + 1]].cpu(),
            kind=alignment.kind, matrix=cut(alignment.matrix),
            ref_mass=r_w[k][r_keep].detach().cpu(), cand_mass=c_w[k][c_keep].detach().cpu(),
            flows={name: cut(f) for name, f in alignment.flows.items()},
            contributions={m: (r[k][r_keep].detach().cpu(), c[k][c_keep].detach().cpu())
                           for m, (r, c) in contributions.items()},
            scores={m: float(v[k]) for m, v in scores.items()},
            raw_scores={m: float(v[k]) for m, v in alignment.scores.items()},
            ref_units=r_units, cand_units=c_units,
        ))
    return out


def display_token(token: str) -> str:
    """A token as a person reads it: the word-boundary marks of byte-level BPE (``Ġ``) and
    SentencePiece (``▁``) removed; WordPiece's ``##`` kept (it says "continues a word")."""
    stripped = token.lstrip("\u0120\u2581")
    return stripped if stripped else token


def unit_labels(tokens: list[str], units: torch.Tensor | None) -> list[str]:
    """Labels for the units: the display token, or an n-gram's display tokens joined by spaces."""
    shown = [display_token(t) for t in tokens]
    if units is None:
        return shown
    return [" ".join(shown[t] for t in row.nonzero().flatten().tolist()) for row in units]
