"""What a fit keeps from one encoding: every layer it mixes, per token, and each language pair's
pairs, masses and match targets, so that the scores are a differentiable function of the
settings it learns (:mod:`alignscore.fit.model`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import torch

from ...aggregators.base import Aggregator, Vectors, layer_list
from ...composition import Composition
from ...engine import Pairs, aligner_inputs, encode, merge_pairs
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
    """One language pair: its pairs as unique-text indices (``ref [P]``, ``cand [P]``) into
    the token table (``offsets``), each token's mass as a reference / candidate before the idf
    exponent (``ref_mass``, ``cand_mass`` ``[N]``), who may be matched (``matchable [N]``) and
    the human scores ``[P]``."""

    name: str
    ref: torch.Tensor
    cand: torch.Tensor
    offsets: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    matchable: torch.Tensor
    human: torch.Tensor
    _batches: list[tuple[torch.Tensor, dict[str, torch.Tensor]]] | None = field(default=None, repr=False,
                                                                                 compare=False)

    def __len__(self) -> int:
        return len(self.human)

    def subset(self, rows: np.ndarray | torch.Tensor) -> "PairFeatures":
        """These features for some of the pairs."""
        rows = torch.as_tensor(rows, dtype=torch.long)
        return replace(self, ref=self.ref[rows], cand=self.cand[rows], human=self.human[rows], _batches=None)

    def batches(self, size: int = 64) -> list[tuple[torch.Tensor, dict[str, torch.Tensor]]]:
        """The pairs in batches of similar length (padding is the cost: one pad width for a
        whole language pair would be its longest text's), each ``(rows, padded)``: the rows
        and, right-padded, the token indices ``ref_idx``, ``cand_idx``, which are tokens
        ``ref_ok``, ``cand_ok``, the masses and who may be matched (made once)."""
        if self._batches is not None and size == 64:
            return self._batches
        lengths = self.offsets[1:] - self.offsets[:-1]
        order = torch.argsort(lengths[self.ref] + lengths[self.cand], descending=True, stable=True)
        out = []
        for start in range(0, len(order), size):
            rows = order[start:start + size]
            r_idx, r_ok = pad_gather(self.offsets, self.ref[rows])
            c_idx, c_ok = pad_gather(self.offsets, self.cand[rows])
            out.append((rows, {"ref_idx": r_idx, "cand_idx": c_idx, "ref_ok": r_ok, "cand_ok": c_ok,
                               "ref_mass": self.ref_mass[r_idx] * r_ok, "cand_mass": self.cand_mass[c_idx] * c_ok,
                               "ref_match": self.matchable[r_idx] & r_ok, "cand_match": self.matchable[c_idx] & c_ok}))
        if size == 64:
            self._batches = out
        return out


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
    merged = merge_pairs(groups)
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
        (setting,) = aligner_inputs(sub, [comp], encoder, None, roles)
        out.append(PairFeatures(lp.name, pairs.ref, pairs.cand, encoded.table.offsets, setting.ref_mass.float().cpu(),
                                setting.cand_mass.float().cpu(), setting.matchable.cpu(),
                                torch.as_tensor(lp.human, dtype=torch.float64)))
    return Features(tuple(layers), states, out)
