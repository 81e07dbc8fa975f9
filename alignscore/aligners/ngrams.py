"""n-gram units for optimal transport (WMD-n; the whole sentence is SMD)."""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import torch

from .._ops import unit

SENTENCE = "sentence"


def ngram_units(members: torch.Tensor, n_gram: int | str) -> torch.Tensor:
    """Sliding windows of ``n`` consecutive member tokens.

    ``members [B, T]`` (bool) marks the tokens that take part in the alignment (those that are
    matchable: not filtered out, and special tokens unless the policy drops them; padding never);
    tokens in between that take no part are skipped, so a window is n consecutive members::

        units[b, s, t] = 1  when token t is the member of rank s .. s + n - 1 of text b

    A text with ``m`` members has ``max(m - n + 1, 1)`` windows when ``m >= 1`` (a text shorter
    than ``n`` is one window of all its members) and none when ``m = 0``; ``"sentence"`` is
    ``n = infinity`` (one window per text); rows past a text's windows are all 0.

    Parameters
    ----------
    members : torch.Tensor
        ``[B, T]`` bool.
    n_gram : int or str
        ``n >= 1`` or ``"sentence"``.

    Returns
    -------
    torch.Tensor
        ``units [B, W, T]`` (0/1, float), ``W = max(T - n + 1, 1)`` (0 when ``T = 0``).

    Examples
    --------
    Bigrams of a text whose third token is filtered out: it is skipped, not a window break.

    >>> members = torch.tensor([[True, True, False, True, True]])
    >>> ngram_units(members, 2)[0].int().tolist()
    [[1, 1, 0, 0, 0], [0, 1, 0, 1, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 0]]
    >>> ngram_units(members, "sentence")[0].int().tolist()
    [[1, 1, 0, 1, 1]]
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


def pool_ngrams(vectors: torch.Tensor, mass: torch.Tensor, members: torch.Tensor, n_gram: int | str,
                scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit vectors ``[B, W, D]`` and masses ``[B, W]`` of the windows of :func:`ngram_units`.

    With ``U`` the windows of ``members``, a window's mass is the sum of its tokens' masses,
    ``M_s = sum_t U_st m_t``, and its vector the mass-weighted average of its tokens' (unit)
    vectors, ``v_s = sum_t U_st m_t x_t / M_s``, scaled to unit length (the costs are between
    unit vectors). Windows without mass get mass 0 and vector 0. ``scale [B, T]`` (the tokens'
    vector lengths before unit scaling): the vector is ``sum_t U_st m_t s_t x_t`` instead, the
    direction of the mass-weighted mean of the unscaled vectors (XMoverScore's); masses unchanged.

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
    vector_weight = weight if scale is None else weight * scale[rows, pos].to(weight)
    weighted = vectors[rows, pos] * vector_weight.to(vectors.dtype).unsqueeze(-1)  # [B, T, D]
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
    pooled = unit(pooled)
    return pooled, unit_mass


def window_size(n_gram: int | str, members: int) -> int:
    """How many consecutive members a window of a text with ``members`` members spans.

    Parameters
    ----------
    n_gram : int or str
        The aligner's ``n_gram`` (``"sentence"``: the whole text).
    members : int
        The text's tokens that take part.

    Returns
    -------
    int
        ``n_gram``, at most ``members``.

    Examples
    --------
    >>> window_size(2, 5), window_size(3, 2), window_size("sentence", 5)
    (2, 2, 5)
    """
    return members if n_gram == SENTENCE else min(int(n_gram), members)


def sliding_sums(a: np.ndarray, width: int, axis: int = -1) -> np.ndarray:
    """Sums of ``width`` consecutive entries along ``axis``, in float64::

        out[s] = sum_(i < width) a[s + i],   s = 0 .. len - width

    (shifted slices for short windows, cumulative sums for long ones).

    Parameters
    ----------
    a : numpy.ndarray
        The values.
    width : int
        The window, ``1 <= width <= a.shape[axis]``.
    axis : int
        The axis summed along.

    Returns
    -------
    numpy.ndarray
        ``a`` with ``len - width + 1`` entries along ``axis``.

    Examples
    --------
    >>> sliding_sums(np.array([1.0, 2.0, 3.0, 4.0]), 2).tolist()
    [3.0, 5.0, 7.0]
    >>> sliding_sums(np.arange(12).reshape(2, 6), 5).tolist()  # the cumulative-sum path
    [[10.0, 15.0], [40.0, 45.0]]
    """
    a = a.astype(np.float64, copy=False)
    lead = (slice(None),) * (axis % a.ndim)
    count = a.shape[axis] - width + 1
    if width <= 4:
        out = a[lead + (slice(0, count),)].copy()
        for j in range(1, width):
            out += a[lead + (slice(j, j + count),)]
        return out
    c = np.cumsum(a, axis=axis)
    head = c[lead + (slice(width - 1, width),)]
    return np.concatenate([head, c[lead + (slice(width, None),)] - c[lead + (slice(0, count - 1),)]], axis=axis)


def compact_members(members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The members of each text moved to the front: ``members [..., T]`` (bool) -> ``index
    [..., P]``, the positions of the members in order (0 past a text's last member), and
    ``count [...]``, how many each text has; ``P`` is the largest count.

    Parameters
    ----------
    members : numpy.ndarray
        ``[..., T]`` bool: the tokens that take part.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(index [..., P], count [...])``.

    Examples
    --------
    >>> index, count = compact_members(np.array([[False, True, False, True], [True, False, False, False]]))
    >>> index.tolist(), count.tolist()
    ([[1, 3], [0, 0]], [2, 1])
    """
    count = members.sum(-1)
    width = int(count.max()) if count.size else 0
    index = np.argsort(~members, axis=-1, kind="stable")[..., :width]
    return np.where(np.arange(width) < count[..., None], index, 0), count


def window_inner(gram: np.ndarray, wr: np.ndarray, wc: np.ndarray, kr: int, kc: int) -> np.ndarray:
    """``p_s . q_t`` between the windows ``p_s = sum_(i < kr) wr_(s+i) x_(s+i)`` and
    ``q_t = sum_(j < kc) wc_(t+j) y_(t+j)`` of two texts, from the inner products of their members
    ``gram [..., mr, mc]`` (``x_i . y_j``) and masses ``wr [..., mr]``, ``wc [..., mc]``:
    ``[..., mr - kr + 1, mc - kc + 1]``, the window sums of ``wr_i wc_j gram_ij``, without forming
    the windows. Zero masses past a text's end add nothing."""
    z = wr[..., :, None] * gram * wc[..., None, :]
    return sliding_sums(sliding_sums(z, kr, axis=-2), kc, axis=-1)


def window_sqnorms(bands: Sequence[np.ndarray], w: np.ndarray, k: int) -> np.ndarray:
    """``|p_s|^2`` of one text's windows ``p_s = sum_(i < k) w_(s+i) x_(s+i)`` (see
    :func:`window_inner`) for masses ``w [..., m]``, from ``bands[d] [..., m - d]``, the inner
    products ``x_i . x_(i+d)`` of members ``d < k`` apart: ``[..., m - k + 1]``::

        |p_s|^2 = sum_i w_(s+i)^2 |x_(s+i)|^2 + 2 sum_(1 <= d < k) sum_i w_(s+i) w_(s+i+d) x_(s+i) . x_(s+i+d)
    """
    m = w.shape[-1]
    out = sliding_sums(w * w * bands[0], k)
    for d in range(1, k):
        out += 2 * sliding_sums(w[..., :m - d] * w[..., d:] * bands[d], k - d)
    return out


class Windows(NamedTuple):
    """One side's n-gram windows in a block of pairs (see :meth:`~alignscore.aligners.optimal.WMD._window_problems`)."""

    index: np.ndarray  # [V, B, P] positions of the members, in order (0 past a text's last)
    weight: np.ndarray  # [V, B, P] their weights in the window vectors: masses (times the norms), 0 past the last
    k: int  # members per window
    count: np.ndarray  # [V, B] windows per text: max(m - k + 1, 1) for m members, 0 for none
    mass: np.ndarray  # [V, B, W] window masses (0 past a text's last window)
    norm: np.ndarray  # [V, B, W] |p_s| of the windows p_s = sum_(i < k) w_(s+i) x_(s+i)
    prefix: bool  # every text's members are its first tokens (index[..., p] = p below its count)


def windows(x: np.ndarray, mass: np.ndarray, members: np.ndarray, n_gram: int | str,
            scale: np.ndarray | None = None) -> Windows | None:
    """The windows of texts ``x [B, T, D]`` (float64) with masses and members ``[V, B, T]``;
    None when no text has a member. ``scale [B, T]``: the tokens' vector lengths before unit
    scaling, by which the vectors (not the masses) are weighted too (:func:`pool_ngrams`)."""
    index, members_per_text = compact_members(members)
    if not index.shape[-1]:
        return None
    k = window_size(n_gram, index.shape[-1])
    weight = np.take_along_axis(mass.astype(np.float64), index, -1)
    weight *= np.arange(index.shape[-1]) < members_per_text[..., None]
    count = np.where(members_per_text > 0, np.maximum(members_per_text - k + 1, 1), 0)
    window_mass = sliding_sums(weight, k) * (np.arange(index.shape[-1] - k + 1) < count[..., None])
    if scale is not None:
        weight = weight * np.take_along_axis(np.broadcast_to(scale, mass.shape).astype(np.float64), index, -1)
    prefix = bool((members[..., 1:] <= members[..., :-1]).all())  # no member after a non-member
    bands = _bands(x, None if prefix else index, index.shape[-1], k)
    return Windows(index, weight, k, count, window_mass, np.sqrt(window_sqnorms(bands, weight, k)), prefix)


def _bands(x: np.ndarray, index: np.ndarray | None, width: int, k: int) -> list[np.ndarray]:
    """``[x_(index_p) . x_(index_(p+d)) for d < k]``, each ``[V, B, width - d]`` (``[1, B, ...]``
    when ``index`` is None: the members are the first ``width`` tokens): the inner products of
    the members ``index [V, B, width]`` of texts ``x [B, T, D]`` that are ``d`` apart. Computed once
    per distinct member layout (variants mostly share one), from the members' vectors: ``O(k P D)``
    per text for short windows, the members' whole Gram matrix for long ones (SMD)."""
    if index is None:
        members, which = x[None, :, :width], [0]  # [1, B, P, D], a view
    else:
        layouts: list[np.ndarray] = []
        which = []
        for layout in index:  # a handful of variants: comparing them is cheaper than np.unique
            u = next((u for u, seen in enumerate(layouts) if np.array_equal(seen, layout)), len(layouts))
            layouts += [layout] if u == len(layouts) else []
            which.append(u)
        members = x[np.arange(x.shape[0])[:, None], np.stack(layouts)]  # [U, B, P, D]
    if k <= 4:
        bands = [np.einsum("ubpd,ubpd->ubp", members[:, :, :width - d], members[:, :, d:]) for d in range(k)]
    else:
        gram = members @ members.transpose(0, 1, 3, 2)
        bands = [np.diagonal(gram, d, -2, -1) for d in range(k)]
    return [b[which] for b in bands]
