"""What a fit keeps from one encoding: every layer it mixes, per token, and each language pair's
pairs, masses and match targets, so that the scores are a differentiable function of the
settings it learns (:mod:`alignscore.fit.model`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from ...aggregators.base import Aggregator, Vectors, layer_list
from ...composition import Composition
from ...engine import Pairs, encode, merge, settings
from ..wmt import LangPair
from ...scorer import Scorer
from ...tokens import pad_gather
from ...weighting.schemes import _Idf


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


@dataclass
class PairFeatures:
    """One language pair: padded token indices into the kept states (``ref_idx [P, Tr]``,
    ``cand_idx [P, Tc]``), which entries are tokens (``ref_ok``, ``cand_ok``), who may be
    matched (``ref_match``, ``cand_match``), each token's mass before the idf exponent
    (``ref_mass``, ``cand_mass``) and the human scores."""

    name: str
    ref_idx: torch.Tensor
    cand_idx: torch.Tensor
    ref_ok: torch.Tensor
    cand_ok: torch.Tensor
    ref_match: torch.Tensor
    cand_match: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    human: torch.Tensor

    def __len__(self) -> int:
        return len(self.human)

    def subset(self, rows: np.ndarray | torch.Tensor) -> "PairFeatures":
        """These features for some of the pairs."""
        rows = torch.as_tensor(rows, dtype=torch.long)
        return PairFeatures(self.name, *(getattr(self, k)[rows] for k in (
            "ref_idx", "cand_idx", "ref_ok", "cand_ok", "ref_match", "cand_match", "ref_mass", "cand_mass", "human")))


@dataclass
class Features:
    """The kept hidden states ``states [N, L, D]`` (float32, each token's layers scaled by one
    common factor) of ``layers``, and one :class:`PairFeatures` per language pair."""

    layers: tuple[int, ...]
    states: torch.Tensor
    pairs: list[PairFeatures]

    @property
    def nbytes(self) -> int:
        return self.states.numel() * self.states.element_size()


def extract(scorer: Scorer, composition: Composition, lang_pairs: Sequence[LangPair], layers: Sequence[int]) -> Features:
    """Encode every text of ``lang_pairs`` once (the engine's one encoding) and keep ``layers``.

    ``composition`` (resolved) gives the token roles and the weighting; an idf weighting is
    fitted per language pair, on its own references (as ``alignscore score`` on that pair's
    files does), with exponent 1: the model raises it to the learned power. The states take
    ``4 x tokens x layers x width`` bytes (:attr:`Features.nbytes`).
    """
    encoder = scorer.scoring_encoder()
    groups = [Pairs.from_pairs(lp.references, lp.candidates) for lp in lang_pairs]
    merged = merge(groups)
    weighting = composition.weighting
    if isinstance(weighting, _Idf):
        weighting = replace(weighting, idf_power=1.0)
    raw = RawLayers(tuple(layers))
    comp = replace(composition, aggregator=raw, weighting=weighting, baseline=None)
    union = replace(merged[0], ref=torch.empty(0, dtype=torch.long), cand=torch.empty(0, dtype=torch.long))
    encoded = encode(encoder, union, [raw], scorer.runtime)
    vectors = encoded.vectors[raw.signature()]
    states = vectors.reshape(len(vectors), len(layers), -1).float().cpu().contiguous()
    out = []
    roles: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for lp, pairs in zip(lang_pairs, merged):
        sub = replace(encoded, pairs=pairs)
        (setting,) = settings(sub, [comp], encoder, None, roles)
        r_idx, r_ok = pad_gather(encoded.table.offsets, pairs.ref)
        c_idx, c_ok = pad_gather(encoded.table.offsets, pairs.cand)
        ref_mass, cand_mass = setting.ref_mass.float().cpu(), setting.cand_mass.float().cpu()
        match = setting.matchable.cpu()
        out.append(PairFeatures(lp.name, r_idx, c_idx, r_ok, c_ok, match[r_idx] & r_ok, match[c_idx] & c_ok,
                                ref_mass[r_idx] * r_ok, cand_mass[c_idx] * c_ok,
                                torch.as_tensor(lp.human, dtype=torch.float64)))
    return Features(tuple(layers), states, out)
