"""What a fit keeps from one encoding: for every pair, the dot products between each candidate
token's and each reference token's states in every two layers it mixes, beside each token's own
layer Gram matrix, masses and match targets. A mix of layers is linear, so its cosine similarity
is a quadratic form in the mix's weights over these (:func:`alignscore.fit.model.mixed_similarity`):
a step of the fit never touches the hidden states, which are dropped once each language pair's
products are made."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from ...aggregators.base import Aggregator, Vectors, layer_list
from ...composition import Composition
from ...engine import Pairs, aligner_inputs, encode, merge_pairs
from ..wmt import LangPair
from ...scorer import Scorer
from ...tokens import pad_gather
from ...settings import settings_of
from ...weighting.classes import TokenClassWeights
from ...weighting.schemes import _Idf
from ...errors import ConfigError


@dataclass(frozen=True)
class RawLayers(Aggregator):
    """The hidden states of ``layers`` side by side, unscaled (``[B, T, L * D]``): the engine
    scales each token's concatenation to unit length, by one factor for all its layers, which
    no softmax mix of them sees (the mix is scaled to unit length after). Not registered: the
    fit's view of an encoding, not a metric."""

    layers: tuple[int, ...]

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "RawLayers":
        return self

    def layers_read(self) -> tuple[int, ...]:
        return self.layers

    def output(self) -> Vectors:
        return Vectors("mix", len(self.layers))

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return states.permute(1, 2, 0, 3).flatten(2)

    def signature(self) -> str:
        return f"raw(L{layer_list(self.layers)})"


#: the token-class weights' settings, in the order of TOKEN_CLASSES
CLASS_SETTINGS = tuple(s for s in settings_of(TokenClassWeights) if s.hint is float)
#: pairs per batch, in order of length (padding is the cost: one pad width for a whole language
#: pair would be its longest text's)
BATCH = 64


@dataclass
class Batch:
    """Some pairs of one language pair, right-padded: ``rows [B]`` (which pairs), ``cross [B, Tc,
    Tr, L * L]`` (candidate token i's layer l state . reference token j's layer m state, at
    ``l * L + m``), ``cand_gram [B, Tc, L * L]`` and ``ref_gram [B, Tr, L * L]`` (each token's
    own), the masses before the idf exponent and the class weights (0 on padding), who may be
    matched and each token's classes (:func:`~alignscore.weighting.token_classes`)."""

    rows: torch.Tensor
    cross: torch.Tensor
    cand_gram: torch.Tensor
    ref_gram: torch.Tensor
    cand_mass: torch.Tensor
    ref_mass: torch.Tensor
    cand_match: torch.Tensor
    ref_match: torch.Tensor
    cand_classes: torch.Tensor
    ref_classes: torch.Tensor

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in vars(self).values())


@dataclass
class PairFeatures:
    """One language pair: its ``batches`` and the ``human`` scores ``[P]``."""

    name: str
    human: torch.Tensor
    batches: list[Batch]

    def __len__(self) -> int:
        return len(self.human)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.batches)


@dataclass
class Features:
    """What a fit keeps of ``layers``: one :class:`PairFeatures` per language pair."""

    layers: tuple[int, ...]
    pairs: list[PairFeatures]

    @property
    def nbytes(self) -> int:
        return sum(pf.nbytes for pf in self.pairs)


def pair_bytes(lengths: torch.Tensor, ref: torch.Tensor, cand: torch.Tensor, layers: int, itemsize: int) -> int:
    """The bytes :func:`products` keeps for the pairs ``ref``, ``cand`` (text indices, token
    counts ``lengths``): known before any product is taken."""
    order = torch.argsort(lengths[ref] + lengths[cand], descending=True, stable=True)
    total = 0
    for start in range(0, len(order), BATCH):
        rows = order[start:start + BATCH]
        tr, tc = int(lengths[ref[rows]].max()), int(lengths[cand[rows]].max())
        total += len(rows) * (tc * tr + tc + tr) * layers * layers * itemsize
    return total


def products(states: torch.Tensor, offsets: torch.Tensor, ref: torch.Tensor, cand: torch.Tensor,
             ref_mass: torch.Tensor, cand_mass: torch.Tensor, matchable: torch.Tensor, classes: torch.Tensor,
             dtype: torch.dtype) -> list[Batch]:
    """The batches of the pairs ``ref``, ``cand`` (text indices into ``offsets``) from the
    token states ``[N, L, D]``, in batches of similar length (computed in float32, or in
    ``dtype`` where it is wider)."""
    states = states.to(torch.promote_types(states.dtype, dtype))
    n, layers, _ = states.shape
    gram = torch.bmm(states, states.transpose(1, 2)).reshape(n, layers * layers)
    lengths = offsets[1:] - offsets[:-1]
    order = torch.argsort(lengths[ref] + lengths[cand], descending=True, stable=True)
    out = []
    for start in range(0, len(order), BATCH):
        rows = order[start:start + BATCH]
        r_idx, r_ok = pad_gather(offsets, ref[rows])
        c_idx, c_ok = pad_gather(offsets, cand[rows])
        b, tr, tc = len(rows), r_idx.shape[1], c_idx.shape[1]
        r_states = (states[r_idx] * r_ok[..., None, None]).reshape(b, tr * layers, -1)
        c_states = (states[c_idx] * c_ok[..., None, None]).reshape(b, tc * layers, -1)
        cross = torch.bmm(c_states, r_states.transpose(1, 2)).reshape(b, tc, layers, tr, layers)
        out.append(Batch(rows, cross.transpose(2, 3).reshape(b, tc, tr, layers * layers).to(dtype),
                         (gram[c_idx] * c_ok[..., None]).to(dtype), (gram[r_idx] * r_ok[..., None]).to(dtype),
                         cand_mass[c_idx] * c_ok, ref_mass[r_idx] * r_ok, matchable[c_idx] & c_ok,
                         matchable[r_idx] & r_ok, classes[c_idx] * c_ok, classes[r_idx] * r_ok))
    return out


def extract(scorer: Scorer, composition: Composition, lang_pairs: Sequence[LangPair], layers: Sequence[int],
            limit: int | None = None, dtype: torch.dtype = torch.float32, too_big: str = "memory") -> Features:
    """Encode each language pair's texts once (the engine's encoding), keep ``layers``' states
    while its :func:`products` are made, then drop them.

    ``composition`` (resolved) gives the token roles and the weighting; an idf weighting is
    fitted per language pair, on its own references (as ``alignscore score`` on that pair's
    files does), with exponent 1 and every token-class weight 1: the model raises it to the
    learned power and multiplies each token's by its classes' learned weights. What is kept takes
    about ``itemsize x L^2 x (Tc Tr + Tc + Tr)`` bytes per pair (:attr:`Features.nbytes`); past
    ``limit`` bytes, a :class:`~alignscore.errors.ConfigError` naming ``too_big`` before the
    products of the language pair that would cross it are made.
    """
    encoder = scorer.scoring_encoder()
    weighting = composition.weighting
    if isinstance(weighting, _Idf):
        weighting = replace(weighting, idf_power=1.0)
    weighting = replace(weighting, **{s.name: 1.0 for s in CLASS_SETTINGS})
    raw = RawLayers(tuple(layers))
    comp = replace(composition, aggregator=raw, weighting=weighting, baseline=None)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    out: list[PairFeatures] = []
    kept = 0
    for lp in lang_pairs:
        (pairs,) = merge_pairs([Pairs.from_pairs(lp.references, lp.candidates)])
        union = replace(pairs, ref=torch.empty(0, dtype=torch.long), cand=torch.empty(0, dtype=torch.long))
        encoded = encode(encoder, union, [raw], scorer.runtime)
        offsets = encoded.table.offsets
        kept += pair_bytes(offsets[1:] - offsets[:-1], pairs.ref, pairs.cand, len(layers), itemsize)
        if limit is not None and kept > limit:
            raise ConfigError(f"{too_big}: the fit would keep more than {limit / 2**30:.2f} GiB by {lp.name} "
                              f"({kept / 2**30:.2f} GiB for {len(layers)} layers); "
                              + ("mix fewer layers or allow more" if len(layers) > 1 else "allow more"))
        vectors = encoded.vectors[raw.signature()]
        states = vectors.reshape(len(vectors), len(layers), -1).float().cpu()
        (setting,) = aligner_inputs(replace(encoded, pairs=pairs), [comp], encoder, None, {})
        out.append(PairFeatures(lp.name, torch.as_tensor(lp.human, dtype=torch.float64),
                                products(states, offsets, pairs.ref, pairs.cand, setting.ref_mass.float().cpu(),
                                         setting.cand_mass.float().cpu(), setting.matchable.cpu(),
                                         weighting.token_class_ids(encoded.table).cpu(), dtype)))
        del encoded, vectors, states
    return Features(tuple(layers), out)
