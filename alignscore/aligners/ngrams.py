"""n-gram units for optimal transport (WMD-n; the whole sentence is SMD)."""

from __future__ import annotations

import torch

from ..errors import ConfigError

SENTENCE = "sentence"


def check_n_gram(n_gram: int | str) -> int | str:
    """An n-gram size: an integer ``>= 1`` or ``"sentence"`` (one unit per text)."""
    if n_gram == SENTENCE:
        return n_gram
    if isinstance(n_gram, bool) or not isinstance(n_gram, int) or n_gram < 1:
        raise ConfigError(f"n_gram must be an integer >= 1 or 'sentence', not {n_gram!r}")
    return n_gram


def ngram_units(members: torch.Tensor, n_gram: int | str) -> torch.Tensor:
    """Sliding windows of ``n`` consecutive member tokens.

    ``members [B, T]`` (bool) marks the tokens that take part in the alignment (those that are
    matchable: not filtered out, and special tokens unless the policy drops them; padding never);
    tokens in between that take no part are skipped, so a window is n consecutive members.
    Returns ``units [B, W, T]`` (0/1, float): ``units[b, s, t] = 1`` when token t is the member of
    rank ``s .. s + n - 1`` of text b. A text with ``m`` members has ``max(m - n + 1, 1)``
    windows when ``m >= 1`` (a text shorter than ``n`` is one window of all its members) and none
    when ``m = 0``; ``"sentence"`` is ``n = infinity`` (one window per text); rows past a text's
    windows are all 0. ``W = max(T - n + 1, 1)`` (0 when ``T = 0``).
    """
    members = members.bool()
    b, t = members.shape
    m = members.sum(-1)  # [B]
    n = t if n_gram == SENTENCE else int(n_gram)
    n_b = torch.minimum(m, torch.full_like(m, max(n, 1)))  # window length per text
    n_win = torch.where(m > 0, m - n_b + 1, torch.zeros_like(m))  # [B]
    w = max(t - min(n, t) + 1, 1) if t else 0
    rank = torch.cumsum(members.long(), -1) - 1  # [B, T]: rank among members
    s = torch.arange(w, device=members.device).view(1, w, 1)
    r = rank.unsqueeze(1)
    inside = members.unsqueeze(1) & (r >= s) & (r < s + n_b.view(b, 1, 1)) & (s < n_win.view(b, 1, 1))
    return inside.float()


def pool_units(vectors: torch.Tensor, mass: torch.Tensor, units: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit vectors and masses of n-gram windows.

    With ``U [B, W, T]`` from :func:`ngram_units`, a window's mass is the sum of its tokens'
    masses, ``M_s = sum_t U_st m_t``, and its vector the mass-weighted average of its tokens'
    (unit) vectors, ``v_s = sum_t U_st m_t x_t / M_s``, scaled to unit length (the costs are
    between unit vectors). Windows without mass get mass 0 and vector 0.
    """
    weights = units.to(mass.dtype) * mass.unsqueeze(1)  # [B, W, T]
    unit_mass = weights.sum(-1)
    pooled = torch.bmm(weights.to(vectors.dtype), vectors)
    pooled = pooled / pooled.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return pooled, unit_mass
