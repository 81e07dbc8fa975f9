"""Greedy matching (BERTScore)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import Aligner, PairBatch, weighted_mean


def greedy_match(ref: torch.Tensor, cand: torch.Tensor, ref_mass: torch.Tensor, cand_mass: torch.Tensor,
                 ref_match: torch.Tensor, cand_match: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """BERTScore precision, recall and F1 over padded batches of unit vectors.

    With reference vectors ``x_i``, candidate vectors ``y_j`` and masses ``w``::

        R = sum_i w_i max_j x_i . y_j / sum_i w_i
        P = sum_j w_j max_i x_i . y_j / sum_j w_j
        F = 2 P R / (P + R)

    The maxima run over matchable tokens only (padding never takes part, so a score never
    depends on what else is in the batch). A pair where either side has no mass gets
    ``P = R = F = 0`` (bert_score's value for empty texts); ``F = 0`` where ``P + R = 0``.

    Returns ``(P, R, F, sim)``: scores ``[B]`` and the similarity matrix ``[B, Tc, Tr]`` with
    non-matchable entries at ``-inf``.
    """
    sim = torch.bmm(cand, ref.transpose(1, 2))
    allowed = cand_match.unsqueeze(2) & ref_match.unsqueeze(1)
    sim = sim.masked_fill(~allowed, float("-inf"))
    p = weighted_mean(sim.amax(dim=2), cand_mass)
    r = weighted_mean(sim.amax(dim=1), ref_mass)
    empty = (cand_mass.sum(-1) <= 0) | (ref_mass.sum(-1) <= 0)
    zero = torch.zeros((), dtype=p.dtype, device=p.device)
    p, r = torch.where(empty, zero, p), torch.where(empty, zero, r)
    denom = p + r
    f = torch.where(denom != 0, 2 * p * r / torch.where(denom != 0, denom, torch.ones_like(denom)), zero)
    return p, r, f, sim


@dataclass(frozen=True)
class Greedy(Aligner):
    """Each token is matched to its most similar token on the other side (cosine similarity)."""

    metrics = ("precision", "recall", "f1")
    primary = "f1"

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        p, r, f, _ = greedy_match(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass,
                                  batch.ref_match, batch.cand_match)
        return {"precision": p, "recall": r, "f1": f}

    def signature(self) -> str:
        return "greedy(cos)"
