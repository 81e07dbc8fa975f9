"""The engine's encoding step: the unique texts of a set of pairs tokenized once and encoded once
for every distinct aggregator (one forward pass per batch reads the union of their layers), the
unit vectors of each kept side by side in one buffer (:func:`encode`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Iterable, Sequence

import numpy as np
import torch

from ._ops import unit
from .aggregators.base import Aggregator
from .aligners.base import NOT_FINITE
from .composition import Composition
from .encoders.base import Encoder
from .errors import NonFiniteError
from .pairs import Pairs
from .runtime import Runtime, embed
from .tokens import TokenTable

__all__ = ["Encoded", "check_vectors", "encode", "norms_read"]


@dataclass
class Encoded:
    """The unique texts of ``pairs`` tokenized (``table``) and encoded: the unit token vectors
    ``[N, D]`` of each aggregator, by its signature (checked finite by :func:`encode`), and
    ``norms [N]``, the length of each token's vector before it was scaled to unit length, for
    the aggregators whose norms a weighting reads
    (:meth:`~alignscore.weighting.base.Weighting.reads_norms`)."""

    pairs: Pairs
    table: TokenTable
    vectors: dict[str, torch.Tensor]
    norms: dict[str, torch.Tensor] = field(default_factory=dict)


class _Stacked:
    """One ``[L, B, T, D] -> [B, T, sum D_a]`` function applying every aggregator ``a`` to its own
    layers (``positions[a]`` into the stacked states) and scaling its vectors to unit length;
    remembers the output widths ``D_a``. An aggregator whose index is in ``norms`` gets one more
    column after its vector: the vector's norm before the scaling (so the norms travel through
    batching, the device scatter and sharding with the vectors, and no other buffer changes)."""

    def __init__(self, aggregators: Sequence[Aggregator], union: Sequence[int], norms: Collection[int] = ()) -> None:
        self.aggregators = list(aggregators)
        self.keep = [int(i in norms) for i in range(len(self.aggregators))]  # 1: a norm column follows
        self.positions: list[list[int] | slice] = []
        for agg in self.aggregators:
            p = [list(union).index(k) for k in agg.layers_read()]
            # consecutive layers as a slice: a view of the states, not a copy
            self.positions.append(slice(p[0], p[-1] + 1) if p == list(range(p[0], p[-1] + 1)) else p)
        self.widths: list[int] = []

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        outs = [agg(states[pos]) for agg, pos in zip(self.aggregators, self.positions)]
        self.widths = [o.shape[-1] for o in outs]
        packed = states.new_empty(*states.shape[1:3], sum(self.widths) + sum(self.keep))
        start = 0
        for o, keep in zip(outs, self.keep):
            end = start + o.shape[-1]
            unit(o, out=packed[..., start:end], norm_out=packed[..., end:end + 1] if keep else None)
            start = end + keep
        return packed


def encode(encoder: Encoder, pairs: Pairs, aggregators: Sequence[Aggregator], runtime: Runtime = Runtime(),
           table: TokenTable | None = None, norms: Collection[str] = ()) -> Encoded:
    """Tokenize the unique texts (unless their ``table`` is given) and encode them once for every
    distinct aggregator (resolved): one forward pass per batch reads the union of their layers.
    ``norms``: the signatures of the aggregators whose vectors' norms before unit scaling are
    kept too (:func:`norms_read`).

    Parameters
    ----------
    encoder : Encoder
        Tokenizes and runs the model.
    pairs : Pairs
        Whose unique texts are encoded.
    aggregators : sequence of Aggregator
        Resolved for ``encoder``; equal ones (by signature) are applied once.
    runtime : Runtime
        Batching, token budget, device, shard, progress.
    table : TokenTable, optional
        The texts already tokenized.
    norms : collection of str
        Aggregator signatures whose norms are kept.

    Returns
    -------
    Encoded
        The token table and, per aggregator signature, the unit vectors ``[N, D]`` (and the
        norms asked for). Raises :class:`~alignscore.errors.NonFiniteError` when a vector is
        not finite.

    Examples
    --------
    Two aggregators, one forward pass:

    >>> from alignscore import SingleLayer
    >>> from alignscore.testing import WordEncoder
    >>> pairs = Pairs.from_pairs(["the cat"], ["a dog"])
    >>> encoded = encode(WordEncoder(), pairs, [SingleLayer(3), SingleLayer(1)])
    >>> len(encoded.table.ids), {sig: tuple(v.shape) for sig, v in encoded.vectors.items()}
    (8, {'L3': (8, 8), 'L1': (8, 8)})
    """
    if table is None:
        table = TokenTable.from_tokenized(encoder.tokenize(pairs.texts))
    distinct: dict[str, Aggregator] = {}
    for agg in aggregators:
        distinct.setdefault(agg.signature(), agg)
    union = sorted({k for agg in distinct.values() for k in agg.layers_read()})
    stacked = _Stacked(list(distinct.values()), union, [i for i, sig in enumerate(distinct) if sig in norms])
    packed = embed(encoder, table, union, stacked, runtime, desc=f"encoding ({encoder.name})")
    if not stacked.widths and len(distinct) > 1 and packed.numel():
        # this process encoded nothing (more processes than batches): learn the widths from one token
        one = torch.full((1, 1), encoder.pad_id, dtype=torch.long)
        stacked(encoder.forward(one, torch.ones_like(one), union))
    if not stacked.widths:  # one aggregator, or no tokens at all
        stacked.widths = [max(packed.shape[-1] - stacked.keep[0], 0)] + [0] * (len(distinct) - 1)
    check_vectors(packed)
    bounds = np.cumsum([0] + [w + k for w, k in zip(stacked.widths, stacked.keep)]).tolist()
    vectors = {sig: packed[:, bounds[i]:bounds[i] + stacked.widths[i]] for i, sig in enumerate(distinct)}
    kept = {sig: bounds[i + 1] - 1 for i, sig in enumerate(distinct) if stacked.keep[i]}
    return Encoded(pairs, table, vectors, {sig: packed[:, col] if col < packed.shape[-1] else packed.new_zeros(len(packed))
                                           for sig, col in kept.items()})


def norms_read(compositions: Iterable[Composition]) -> set[str]:
    """The signatures of the aggregators whose norms a composition's weighting or aligner reads
    (what :func:`encode` must keep)."""
    return {c.aggregator.signature() for c in compositions if c.weighting.reads_norms() or c.aligner.reads_norms()}


def check_vectors(vectors: torch.Tensor) -> None:
    """Raise :class:`~alignscore.errors.NonFiniteError` when ``vectors`` hold NaN or infinity (once
    per encoding: the batches built from them need no check of their own).

    Parameters
    ----------
    vectors : torch.Tensor
        Token vectors, any shape.

    Returns
    -------
    None
        Returns when every value is finite.

    Examples
    --------
    >>> check_vectors(torch.tensor([[1.0, float("inf")]]))
    Traceback (most recent call last):
    alignscore.errors.NonFiniteError: the token vectors hold NaN or infinity (...): no score is computed from them
    """
    if not bool(torch.isfinite(vectors.sum())):
        raise NonFiniteError(f"the token vectors {NOT_FINITE}")
