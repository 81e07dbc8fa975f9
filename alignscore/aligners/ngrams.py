"""n-gram units for optimal transport (WMD-n; the whole sentence is SMD)."""

from __future__ import annotations

import numpy as np
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


def pool_ngrams(vectors: torch.Tensor, mass: torch.Tensor, members: torch.Tensor, n_gram: int | str
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit vectors ``[B, W, D]`` and masses ``[B, W]`` of the windows of :func:`ngram_units`.

    With ``U`` the windows of ``members``, a window's mass is the sum of its tokens' masses,
    ``M_s = sum_t U_st m_t``, and its vector the mass-weighted average of its tokens' (unit)
    vectors, ``v_s = sum_t U_st m_t x_t / M_s``, scaled to unit length (the costs are between
    unit vectors). Windows without mass get mass 0 and vector 0.

    Computed without the dense ``U``: the members of each text are first moved to the front in
    order (``c_r`` = the member of rank r, weight ``w_r = m`` of it, 0 past the last member),
    so window s is ``sum_(k < n) w_(s+k) c_(s+k)``: n shifted slices, or one masked sum per
    text when a window spans the whole text (``"sentence"``, or texts no longer than ``n``).
    """
    members = members.bool()
    b, t = members.shape
    m = members.sum(-1)
    n = t if n_gram == SENTENCE else int(n_gram)
    k = min(n, t)
    w = max(t - k + 1, 1) if t else 0
    n_b = torch.minimum(m, torch.full_like(m, max(n, 1)))
    n_win = torch.where(m > 0, m - n_b + 1, torch.zeros_like(m))
    pos = torch.argsort((~members).to(torch.uint8), dim=1, stable=True)  # members first, in order
    rows = torch.arange(b, device=members.device).unsqueeze(1)
    ranked = torch.arange(t, device=members.device).unsqueeze(0) < m.unsqueeze(1)
    weight = mass[rows, pos] * ranked  # [B, T]: mass of the member of rank r, 0 past the last
    weighted = vectors[rows, pos] * weight.to(vectors.dtype).unsqueeze(-1)  # [B, T, D]
    if w == 1:  # one window per text: all its members
        pooled, unit_mass = weighted.sum(1, keepdim=True), weight.sum(1, keepdim=True)
    else:
        pooled = weighted.new_zeros(b, w, vectors.shape[-1])
        unit_mass = weight.new_zeros(b, w)
        for j in range(k):  # the n slots of a window (n: the n-gram order)
            pooled += weighted[:, j:j + w]
            unit_mass += weight[:, j:j + w]
    keep = torch.arange(w, device=members.device).unsqueeze(0) < n_win.unsqueeze(1)  # [B, W]
    pooled = pooled * keep.unsqueeze(-1)
    unit_mass = unit_mass * keep
    pooled = pooled / pooled.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return pooled, unit_mass


def pool_ngrams_np(x: np.ndarray, w: np.ndarray, n_gram: int | str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pool_ngrams` for the members of one text, in NumPy (same float32 sums in the same
    order): ``x [m, D]`` the member vectors in order, ``w [..., m]`` their masses (a leading axis
    pools several mass settings of the same members at once). Returns the windows' unit vectors
    ``[..., W, D]`` and masses ``[..., W]``, ``W = max(m - n + 1, 1)`` (0 if m = 0)."""
    m = w.shape[-1]
    lead = w.shape[:-1]
    if m == 0:
        return np.zeros(lead + (0, x.shape[1]), dtype=x.dtype), w
    n = m if n_gram == SENTENCE else min(int(n_gram), m)
    windows = m - n + 1
    weighted = x * w.astype(x.dtype)[..., None]
    if windows == 1:  # one window: all members
        pooled, mass = weighted.sum(-2, keepdims=True), w.sum(-1, keepdims=True)
    else:
        pooled = np.zeros(lead + (windows, x.shape[1]), dtype=x.dtype)
        mass = np.zeros(lead + (windows,), dtype=w.dtype)
        for j in range(n):  # the n slots of a window (n: the n-gram order)
            pooled += weighted[..., j:j + windows, :]
            mass += w[..., j:j + windows]
    norm = np.maximum(np.sqrt((pooled * pooled).sum(-1, keepdims=True)), np.float32(1e-12))
    return pooled / norm, mass
