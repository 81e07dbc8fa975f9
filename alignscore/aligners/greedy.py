"""Greedy matching (BERTScore)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from .base import Aligner, Alignment, PairBatch, check_finite, same_vectors, weighted_mean


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
    return match_similarities(torch.bmm(cand, ref.transpose(1, 2)), ref_mass, cand_mass, ref_match, cand_match)


def match_similarities(sim: torch.Tensor, ref_mass: torch.Tensor, cand_mass: torch.Tensor, ref_match: torch.Tensor,
                       cand_match: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`greedy_match` from the similarities ``sim [B, Tc, Tr] = y_j . x_i`` (not modified)."""
    allowed = cand_match.unsqueeze(2) & ref_match.unsqueeze(1)
    sim = sim.masked_fill(~allowed, float("-inf"))
    if sim.shape[1] == 0 or sim.shape[2] == 0:  # a batch of token-less texts: nothing to take a max over
        zero = sim.new_zeros(sim.shape[0])
        return zero, zero.clone(), zero.clone(), sim
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

    name = "greedy"
    metrics = ("precision", "recall", "f1")
    primary = "f1"

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        check_finite(batch)
        p, r, f, _ = greedy_match(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass,
                                  batch.ref_match, batch.cand_match)
        return {"precision": p, "recall": r, "f1": f}

    def score_variants(self, batches: Sequence[PairBatch]) -> list[dict[str, torch.Tensor]]:
        """One similarity matrix for all the variants (it only depends on the vectors)."""
        first = same_vectors(batches)
        sim = torch.bmm(first.cand, first.ref.transpose(1, 2))
        out = []
        for b in batches:
            p, r, f, _ = match_similarities(sim, b.ref_mass, b.cand_mass, b.ref_match, b.cand_match)
            out.append({"precision": p, "recall": r, "f1": f})
        return out

    def alignment(self, batch: PairBatch) -> Alignment:
        """Matches and contributions. With normalised masses ``w``, candidate token j adds
        ``w_j max_i s_ij`` to P and reference token i adds ``w_i max_j s_ij`` to R; F is split as
        ``F = F/(2P) * P + F/(2R) * R``, so each side's shares scale its P or R shares."""
        check_finite(batch)
        p, r, f, sim = greedy_match(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass,
                                    batch.ref_match, batch.cand_match)
        sim_rc = sim.transpose(1, 2)  # [B, Tr, Tc]
        zero = torch.zeros((), dtype=sim.dtype, device=sim.device)
        empty = (p == 0) & (r == 0)

        def share(best: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:
            w = mass / mass.sum(-1, keepdim=True).clamp_min(torch.finfo(mass.dtype).tiny)
            out = torch.where(mass > 0, best, zero) * w
            return torch.where(empty.unsqueeze(-1), zero, out)

        r_best, r_arg = sim_rc.max(dim=2)  # each reference token's best candidate token
        c_best, c_arg = sim_rc.max(dim=1)
        r_share, c_share = share(r_best, batch.ref_mass), share(c_best, batch.cand_mass)
        recall_flow = torch.zeros_like(sim_rc).scatter_(2, r_arg.unsqueeze(2), r_share.unsqueeze(2))
        precision_flow = torch.zeros_like(sim_rc).scatter_(1, c_arg.unsqueeze(1), c_share.unsqueeze(1))
        half_p = torch.where(p != 0, f / (2 * torch.where(p != 0, p, torch.ones_like(p))), zero)
        half_r = torch.where(r != 0, f / (2 * torch.where(r != 0, r, torch.ones_like(r))), zero)
        return Alignment(
            kind="similarity",
            matrix=sim_rc.masked_fill(~torch.isfinite(sim_rc), float("nan")),
            flows={"recall": recall_flow, "precision": precision_flow},
            contributions={
                "precision": (torch.zeros_like(r_share), c_share),
                "recall": (r_share, torch.zeros_like(c_share)),
                "f1": (r_share * half_r.unsqueeze(-1), c_share * half_p.unsqueeze(-1)),
            },
            scores={"precision": p, "recall": r, "f1": f},
        )

    def signature(self) -> str:
        return "greedy(cos)"
