"""The n-gram windows of the optimal-transport aligners (WMD-n, SMD: :mod:`alignscore.aligners.ngrams`)
as differentiable functions of the mix's weights and the tokens' masses, from what
:mod:`~alignscore.fit.features` keeps.

A text's windows slide over its members (the tokens that may be matched) in rank order: window
``s`` spans the members of rank ``s .. s + k - 1`` (``k = n``, or all of a batch side's members
for ``"sentence"``; a text with fewer members is one window of them all). With ``w_t`` a
member's weight in the window vectors (its mass ``m_t``; times its mixed vector's length for
``ngram_mean = "states"``) and ``x_t`` the unit token vectors, a window's vector is ``p_s =
sum_(t in s) w_t x_t`` scaled to unit length and its mass ``M_s = sum_(t in s) m_t``, so::

    cos(p_s, q_s') = sum_(t in s, u in s') w_t w_u cos(x_t, y_u) / (|p_s| |q_s'|)
    |p_s|^2 = sum_(t, t' in s) w_t w_t' cos(x_t, x_t')

The first sum needs the tokens' cosines the fit already has; the second those between a text's
own members fewer than ``k`` ranks apart (the band of :func:`~alignscore.fit.features.band_products`).
The windows' costs and transport then follow as the tokens' do
(:func:`~alignscore.fit.transport.transport_scores`)."""

from __future__ import annotations

import torch

from .._ops import UNIT_FLOOR
from ..aligners.optimal import TransportAligner
from .features import Batch, ranked


def sliding(x: torch.Tensor, width: int, dim: int, count: int) -> torch.Tensor:
    """The sums of ``width`` consecutive entries of ``x`` along ``dim``, the first ``count`` of
    them (``out[s] = sum_(i < width) x[s + i]``); differentiable.

    Examples
    --------
    >>> sliding(torch.tensor([1.0, 2.0, 3.0, 4.0]), 2, 0, 2).tolist()
    [3.0, 5.0]
    """
    return x.unfold(dim, width, 1).sum(-1).narrow(dim, 0, count)


def side_windows(gram: torch.Tensor, band: torch.Tensor, norm: torch.Tensor, mass: torch.Tensor,
                 members: torch.Tensor, cc: torch.Tensor, states: bool
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One side's windows: ``(pos [B, P], weight [B, P], mass [B, W], norm [B, W])``, the
    members' positions in rank order (:func:`~alignscore.fit.features.ranked`), their
    weights in the window vectors, the windows' masses (0 past a text's last window) and vector
    lengths ``|p_s|`` (floored as :func:`alignscore._ops.unit` floors them).

    Parameters
    ----------
    gram, band : torch.Tensor
        ``[B, T, L * L]`` each token's own layer products; ``[B, P, K - 1, L * L]`` those of
        members ``1 .. K - 1`` ranks apart (windows of ``K`` members).
    norm, mass : torch.Tensor
        ``[B, T]`` the tokens' mixed vector lengths (floored) and masses.
    members : torch.Tensor
        ``[B, T]`` bool: the tokens that take part.
    cc : torch.Tensor
        ``[L * L]`` the mix's ``c c'``.
    states : bool
        ``ngram_mean = "states"``: a member's weight is its mass times its vector's length.

    Returns
    -------
    tuple of torch.Tensor
        As above; ``W = P - K + 1`` (0 when no text has a member).
    """
    pos, ok = ranked(members)
    p, k = pos.shape[1], band.shape[2] + 1
    if p == 0:
        empty = mass.new_zeros(mass.shape[0], 0)
        return pos, empty, empty, empty
    m = mass.gather(1, pos) * ok
    n = norm.gather(1, pos)
    w = m * n if states else m
    own = (gram.gather(1, pos.unsqueeze(-1).expand(-1, -1, gram.shape[-1])).to(cc.dtype) @ cc) / (n * n)
    count = ok.sum(-1)
    windows = p - k + 1
    keep = torch.arange(windows).unsqueeze(0) < torch.where(count > 0, (count - k + 1).clamp_min(1), 0).unsqueeze(1)
    sq = sliding(w * w * own, k, 1, windows)
    for d in range(1, k):
        near = (band[:, :p - d, d - 1].to(cc.dtype) @ cc) / (n[:, :p - d] * n[:, d:])
        sq = sq + 2 * sliding(w[:, :p - d] * w[:, d:] * near, k - d, 1, windows)
    return pos, w, sliding(m, k, 1, windows) * keep, sq.clamp_min(UNIT_FLOOR * UNIT_FLOOR).sqrt()


def window_problem(batch: Batch, sim: torch.Tensor, terms: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                   ref_mass: torch.Tensor, cand_mass: torch.Tensor, aligner: TransportAligner
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The windows' cosines ``[B, Wc, Wr]`` (candidate by reference) and unnormalised masses
    ``[B, Wr]``, ``[B, Wc]`` of ``aligner``'s n-gram windows, what
    :func:`~alignscore.fit.transport.transport_scores` takes for tokens.

    Parameters
    ----------
    batch : Batch
        With its bands (kept for the aligner's ``n_gram``).
    sim : torch.Tensor
        ``[B, Tc, Tr]`` the tokens' mixed cosines
        (:func:`~alignscore.fit.model.mixed_similarity`).
    terms : tuple of torch.Tensor
        ``(cc, cand_norm, ref_norm)`` of :func:`~alignscore.fit.model.mix_terms`.
    ref_mass, cand_mass : torch.Tensor
        ``[B, Tr]``, ``[B, Tc]`` the tokens' masses (the idf exponent and class weights applied).
    aligner : TransportAligner
        With ``n_gram`` 2 or more or ``"sentence"``; ``ngram_mean = "states"`` weighs each member's
        vector by its length (as :meth:`~alignscore.aligners.optimal.WMD.reads_norms` says).

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, ref_window_mass, cand_window_mass)``, differentiable in ``sim``, ``terms`` and the
        masses.
    """
    if batch.cand_band is None or batch.ref_band is None:
        raise ValueError(f"aligner {aligner.signature()} runs over n-gram windows: extract the features for it "
                         "(their within-text products were not kept)")
    cc, cand_norm, ref_norm = terms
    states = aligner.reads_norms()
    ref_mass, cand_mass = ref_mass.to(cc.dtype), cand_mass.to(cc.dtype)
    pos_r, w_r, mass_r, norm_r = side_windows(batch.ref_gram, batch.ref_band, ref_norm, ref_mass, batch.ref_match,
                                              cc, states)
    pos_c, w_c, mass_c, norm_c = side_windows(batch.cand_gram, batch.cand_band, cand_norm, cand_mass,
                                              batch.cand_match, cc, states)
    wr, wc = mass_r.shape[1], mass_c.shape[1]
    if not wr or not wc:
        return sim.new_zeros(sim.shape[0], wc, wr), mass_r, mass_c
    members = sim.gather(1, pos_c.unsqueeze(-1).expand(-1, -1, sim.shape[2]))
    members = members.gather(2, pos_r.unsqueeze(1).expand(-1, members.shape[1], -1))  # [B, Pc, Pr]
    z = w_c.unsqueeze(2) * members.to(cc.dtype) * w_r.unsqueeze(1)
    inner = sliding(sliding(z, batch.cand_band.shape[2] + 1, 1, wc), batch.ref_band.shape[2] + 1, 2, wr)
    return inner / (norm_c.unsqueeze(2) * norm_r.unsqueeze(1)), mass_r, mass_c
