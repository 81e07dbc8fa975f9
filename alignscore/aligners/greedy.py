"""Greedy matching (BERTScore)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..settings import check_settings, setting
from .base import Aligner, Alignment, PairBatch, check_finite, number, same_vectors, weighted_mean


# beta^2 P must stay finite in float32 (beta above about 1.8e19 overflows); beyond 1e6, F_beta is recall
# (or, below 1e-6, precision) to within 1e-12 anyway
MAX_BETA = 1e6


def soft_max(sim: torch.Tensor, dim: int, temperature: float | torch.Tensor = 0.0) -> torch.Tensor:
    """A token's best similarity, exact or soft::

        T = 0:  max_j s_ij          T > 0:  T log sum_j exp(s_ij / T)

    The soft form is at least the maximum and at most ``T log n`` above it, tends to it as
    ``T -> 0`` and is differentiable in ``s`` and ``T`` (a tensor ``T`` may be learned). Entries
    of ``-inf`` (tokens that may not be matched) take no part; a row of only ``-inf`` gives
    ``-inf`` with a zero gradient (never NaN).

    Parameters
    ----------
    sim : torch.Tensor
        Similarities, ``-inf`` where a token may not be matched.
    dim : int
        The axis the best match is taken over.
    temperature : float or torch.Tensor
        ``T >= 0`` (a Python 0 is the exact maximum).

    Returns
    -------
    torch.Tensor
        ``sim`` without ``dim``.

    Examples
    --------
    >>> s = torch.tensor([[0.2, 0.9, float("-inf")]])
    >>> [round(x, 4) for x in soft_max(s, 1).tolist()], [round(x, 4) for x in soft_max(s, 1, 0.1).tolist()]
    ([0.9], [0.9001])
    """
    if not isinstance(temperature, torch.Tensor) and temperature == 0:
        return sim.amax(dim=dim)
    zero = torch.zeros((), dtype=sim.dtype, device=sim.device)
    minus_inf = torch.full((), float("-inf"), dtype=sim.dtype, device=sim.device)
    finite = torch.isfinite(sim)
    some = finite.any(dim=dim, keepdim=True)
    # -inf enters only after the division, and rows without a finite entry see zeros, so that no
    # gradient is inf * 0
    scaled = torch.where(finite, torch.where(finite, sim, zero) / temperature, minus_inf)
    out = temperature * torch.logsumexp(torch.where(some, scaled, zero), dim=dim)
    return torch.where(some.squeeze(dim), out, minus_inf)


def greedy_match(ref: torch.Tensor, cand: torch.Tensor, ref_mass: torch.Tensor, cand_mass: torch.Tensor,
                 ref_match: torch.Tensor, cand_match: torch.Tensor, temperature: float = 0.0
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """BERTScore precision, recall and F1 over padded batches of unit vectors.

    With reference vectors ``x_i``, candidate vectors ``y_j`` and masses ``w``::

        R = sum_i w_i max_j x_i . y_j / sum_i w_i
        P = sum_j w_j max_i x_i . y_j / sum_j w_j
        F = 2 P R / (P + R)

    The maxima run over matchable tokens only (padding never takes part, so a score never
    depends on what else is in the batch); with ``temperature`` ``T > 0`` each maximum is the
    soft one of :func:`soft_max`. A pair where either side has no mass gets
    ``P = R = F = 0`` (bert_score's value for empty texts); ``F = 0`` where ``P + R = 0``.

    Parameters
    ----------
    ref : torch.Tensor
        ``[B, Tr, D]`` reference token vectors (unit length; anything at padding).
    cand : torch.Tensor
        ``[B, Tc, D]`` candidate token vectors.
    ref_mass, cand_mass : torch.Tensor
        ``[B, Tr]``, ``[B, Tc]`` token masses ``w >= 0`` (0 at padding).
    ref_match, cand_match : torch.Tensor
        ``[B, Tr]``, ``[B, Tc]`` bool: the tokens that may be matched (False at padding).

    Returns
    -------
    P, R, F : torch.Tensor
        ``[B]`` each.
    sim : torch.Tensor
        ``[B, Tc, Tr]`` similarities ``y_j . x_i``, ``-inf`` where a token may not be matched.

    Examples
    --------
    Two reference tokens, one candidate token between them:

    >>> ref = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> cand = torch.tensor([[[0.6, 0.8]]])
    >>> p, r, f, sim = greedy_match(ref, cand, torch.ones(1, 2), torch.ones(1, 1),
    ...                             torch.ones(1, 2, dtype=torch.bool), torch.ones(1, 1, dtype=torch.bool))
    >>> round(p.item(), 4), round(r.item(), 4), round(f.item(), 4)
    (0.8, 0.7, 0.7467)

    Padding is never matched, even where every similarity is negative:

    >>> ref = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]])  # one token, then padding
    >>> p, r, f, _ = greedy_match(ref, -ref[:, :1], torch.tensor([[1.0, 0.0]]), torch.ones(1, 1),
    ...                           torch.tensor([[True, False]]), torch.ones(1, 1, dtype=torch.bool))
    >>> p.item(), r.item()
    (-1.0, -1.0)
    """
    return match_similarities(torch.bmm(cand, ref.transpose(1, 2)), ref_mass, cand_mass, ref_match, cand_match,
                              temperature)


def match_similarities(sim: torch.Tensor, ref_mass: torch.Tensor, cand_mass: torch.Tensor, ref_match: torch.Tensor,
                       cand_match: torch.Tensor, temperature: float | torch.Tensor = 0.0
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`greedy_match` from the similarities ``sim [B, Tc, Tr] = y_j . x_i`` (not modified);
    differentiable in ``sim``, the masses and a tensor ``temperature``."""
    allowed = cand_match.unsqueeze(2) & ref_match.unsqueeze(1)
    sim = sim.masked_fill(~allowed, float("-inf"))
    if sim.shape[1] == 0 or sim.shape[2] == 0:  # a batch of token-less texts: nothing to take a max over
        zero = sim.new_zeros(sim.shape[0])
        return zero, zero.clone(), zero.clone(), sim
    p = weighted_mean(soft_max(sim, 2, temperature), cand_mass)
    r = weighted_mean(soft_max(sim, 1, temperature), ref_mass)
    empty = (cand_mass.sum(-1) <= 0) | (ref_mass.sum(-1) <= 0)
    zero = torch.zeros((), dtype=p.dtype, device=p.device)
    p, r = torch.where(empty, zero, p), torch.where(empty, zero, r)
    denom = p + r
    f = torch.where(denom != 0, 2 * p * r / torch.where(denom != 0, denom, torch.ones_like(denom)), zero)
    return p, r, f, sim


def f_beta(p: torch.Tensor, r: torch.Tensor, beta: float) -> torch.Tensor:
    """The recall-weighted F-score (van Rijsbergen's F)::

        F_beta = (1 + beta^2) P R / (beta^2 P + R)

    the weighted harmonic mean ``1 / F_beta = w_P / P + w_R / R`` with ``w_P = 1 / (1 + beta^2)``
    and ``w_R = beta^2 / (1 + beta^2)``, so recall counts ``beta^2`` times as much as precision
    (``beta = 1`` is F1, ``beta = 2`` weighs recall 4 : 1). ``F_beta = 0`` where
    ``beta^2 P + R = 0`` (as F1 where ``P + R = 0``: empty pairs score 0, never NaN).

    Parameters
    ----------
    p, r : torch.Tensor
        Precision and recall, same shape.
    beta : float
        ``beta > 0``.

    Returns
    -------
    torch.Tensor
        ``F_beta``, the shape of ``p``.

    Examples
    --------
    >>> p, r = torch.tensor([0.5, 0.9, 0.0]), torch.tensor([1.0, 0.6, 0.0])
    >>> [round(x, 4) for x in f_beta(p, r, 2.0).tolist()]  # 5 P R / (4 P + R)
    [0.8333, 0.6429, 0.0]
    >>> [round(x, 4) for x in f_beta(p, r, 1.0).tolist()]  # F1
    [0.6667, 0.72, 0.0]
    """
    b2 = beta * beta
    denom = b2 * p + r
    ok = denom != 0
    zero = torch.zeros((), dtype=p.dtype, device=p.device)
    return torch.where(ok, (1 + b2) * p * r / torch.where(ok, denom, torch.ones_like(denom)), zero)


@dataclass(frozen=True)
class Greedy(Aligner):
    """Each token is matched to its most similar token on the other side (cosine similarity).

    Reports ``precision``, ``recall`` and ``f1`` (:func:`greedy_match`); with ``beta`` also
    ``fbeta``, the recall-weighted :func:`f_beta` of the same P and R. The best of several
    references is the one with the best F1, whatever ``beta``.

    Parameters
    ----------
    beta : float, optional
        Adds the ``fbeta`` metric with this ``beta > 0`` (``beta > 1`` weighs recall more,
        ``beta = 1`` equals ``f1``); ``None``: P, R and F1 only.
    temperature : float
        ``T > 0`` makes the match soft: each token's best similarity is
        ``T log sum_j exp(s_ij / T)`` (:func:`soft_max`); ``0`` (the default) is the exact greedy
        match, its limit. The alignment shown stays each token's single best match.

    Returns
    -------
    Greedy
        Called on a :class:`~alignscore.aligners.base.PairBatch`: ``{metric: [B]}``.

    Examples
    --------
    A candidate holding two of its reference's three tokens: every candidate token is matched
    (precision 1), two of three reference tokens are (recall 2/3):

    >>> import torch
    >>> from alignscore.aligners import PairBatch
    >>> ref = torch.eye(3).unsqueeze(0)   # three orthogonal unit token vectors
    >>> batch = PairBatch(ref=ref, cand=ref[:, :2], ref_mass=torch.ones(1, 3), cand_mass=torch.ones(1, 2),
    ...                   ref_match=torch.ones(1, 3, dtype=torch.bool), cand_match=torch.ones(1, 2, dtype=torch.bool))
    >>> {k: round(v.item(), 4) for k, v in Greedy()(batch).items()}
    {'precision': 1.0, 'recall': 0.6667, 'f1': 0.8}
    >>> round(Greedy(beta=2.0)(batch)["fbeta"].item(), 4)
    0.7143
    """

    beta: float | None = setting(None, ge=1 / MAX_BETA, le=MAX_BETA, help=(
        "greedy: also report F_beta, recall weighted beta^2 times precision (beta = 2: 4 to 1); F1 stays the "
        "primary score (beyond 1e-6..1e6, F_beta is precision or recall to within 1e-12)."))
    temperature: float = setting(0.0, ge=0, le=10, help=(
        "greedy: a soft match, each token's best similarity T*logsumexp(s/T) (at most T*log n above the "
        "maximum); 0, the default, is the exact greedy match."))

    name = "greedy"
    primary = "f1"

    def __post_init__(self) -> None:
        check_settings(self)

    @property
    def metrics(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("precision", "recall", "f1") + (("fbeta",) if self.beta is not None else ())

    def _scores(self, p: torch.Tensor, r: torch.Tensor, f: torch.Tensor) -> dict[str, torch.Tensor]:
        out = {"precision": p, "recall": r, "f1": f}
        if self.beta is not None:
            out["fbeta"] = f_beta(p, r, self.beta)
        return out

    def __call__(self, batch: PairBatch) -> dict[str, torch.Tensor]:
        check_finite(batch)
        p, r, f, _ = greedy_match(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass,
                                  batch.ref_match, batch.cand_match, self.temperature)
        return self._scores(p, r, f)

    def score_variants(self, batches: Sequence[PairBatch]) -> list[dict[str, torch.Tensor]]:
        """One similarity matrix for all the variants (it only depends on the vectors)."""
        first = same_vectors(batches)
        sim = torch.bmm(first.cand, first.ref.transpose(1, 2))
        out = []
        for b in batches:
            out.append(self._scores(*match_similarities(sim, b.ref_mass, b.cand_mass, b.ref_match,
                                                        b.cand_match, self.temperature)[:3]))
        return out

    def alignment(self, batch: PairBatch) -> Alignment:
        """Matches and contributions. With normalised masses ``w``, candidate token j adds
        ``w_j max_i s_ij`` to P and reference token i adds ``w_i max_j s_ij`` to R; F1 is split as
        ``F = F/(2P) * P + F/(2R) * R``, so each side's shares scale its P or R shares.

        ``F_beta`` is split by the weights of its harmonic mean (:func:`f_beta`):
        ``F_beta = w_P F_beta / P * P + w_R F_beta / R * R`` with ``w_P = 1 / (1 + beta^2)``,
        ``w_R = beta^2 / (1 + beta^2)``: the candidate tokens carry ``w_P F_beta`` in all, the
        reference tokens ``w_R F_beta``, ``beta^2`` times as much (for ``beta = 1``, F1's split)."""
        check_finite(batch)
        p, r, f, sim = greedy_match(batch.ref, batch.cand, batch.ref_mass, batch.cand_mass,
                                    batch.ref_match, batch.cand_match, self.temperature)
        sim_rc = sim.transpose(1, 2)  # [B, Tr, Tc]
        zero = torch.zeros((), dtype=sim.dtype, device=sim.device)
        empty = (p == 0) & (r == 0)

        def share(best: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:
            w = mass / mass.sum(-1, keepdim=True).clamp_min(torch.finfo(mass.dtype).tiny)
            out = torch.where(mass > 0, best, zero) * w
            return torch.where(empty.unsqueeze(-1), zero, out)

        r_best, r_arg = sim_rc.max(dim=2)  # each reference token's best candidate token
        c_best, c_arg = sim_rc.max(dim=1)
        if self.temperature:  # the shares sum to the soft scores; the arrows stay on the best match
            r_best, c_best = soft_max(sim_rc, 2, self.temperature), soft_max(sim_rc, 1, self.temperature)
        r_share, c_share = share(r_best, batch.ref_mass), share(c_best, batch.cand_mass)
        recall_flow = torch.zeros_like(sim_rc).scatter_(2, r_arg.unsqueeze(2), r_share.unsqueeze(2))
        precision_flow = torch.zeros_like(sim_rc).scatter_(1, c_arg.unsqueeze(1), c_share.unsqueeze(1))

        def split(score: torch.Tensor, w_p: float) -> tuple[torch.Tensor, torch.Tensor]:
            """``score = (w_R score / R) R + (w_P score / P) P`` as per-token shares."""
            on_p = torch.where(p != 0, w_p * score / torch.where(p != 0, p, torch.ones_like(p)), zero)
            on_r = torch.where(r != 0, (1 - w_p) * score / torch.where(r != 0, r, torch.ones_like(r)), zero)
            return r_share * on_r.unsqueeze(-1), c_share * on_p.unsqueeze(-1)

        scores = self._scores(p, r, f)
        contributions = {
            "precision": (torch.zeros_like(r_share), c_share),
            "recall": (r_share, torch.zeros_like(c_share)),
            "f1": split(f, 0.5),
        }
        if self.beta is not None:
            contributions["fbeta"] = split(scores["fbeta"], 1 / (1 + self.beta * self.beta))
        return Alignment(
            kind="similarity",
            matrix=sim_rc.masked_fill(~torch.isfinite(sim_rc), float("nan")),
            flows={"recall": recall_flow, "precision": precision_flow},
            contributions=contributions,
            scores=scores,
        )

    def signature(self) -> str:
        extra = ([f"beta={number(self.beta)}"] if self.beta is not None else []) + (
            [f"T={number(self.temperature)}"] if self.temperature else [])
        return f"greedy({','.join(['cos', *extra])})"
