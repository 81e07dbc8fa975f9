"""Small tensor operations shared by several stages (a leaf module: it imports nothing of ours)."""

from __future__ import annotations

import numpy as np
import torch


#: The smallest length :func:`unit` divides by: a shorter vector has no direction (it stays
#: about zero, and its cosine with anything, itself included, is about 0).
UNIT_FLOOR = 1e-12


def unit(vectors: torch.Tensor, out: torch.Tensor | None = None, norm_out: torch.Tensor | None = None
         ) -> torch.Tensor:
    """``v / max(||v||, 1e-12)`` along the last axis (a zero vector stays zero), written to
    ``out`` when given (``vectors`` itself, or a slice of a larger tensor: no second copy);
    ``norm_out`` (``[..., 1]``), when given, receives ``||v||`` itself (what the ``norm``
    weighting reads)."""
    norm = vectors.norm(dim=-1, keepdim=True)
    if norm_out is not None:
        norm_out.copy_(norm)
    return torch.div(vectors, norm.clamp_min(UNIT_FLOOR), out=out)


def normalise_mass(mass: torch.Tensor) -> torch.Tensor:
    """``m_i / sum_j m_j`` over the last axis, in ``mass``'s dtype; 0 where the masses sum to 0."""
    total = mass.sum(-1, keepdim=True)
    return torch.where(total > 0, mass / torch.where(total > 0, total, torch.ones_like(total)),
                       torch.zeros_like(mass))


def row_totals(x: np.ndarray) -> np.ndarray:
    """``[..., 1]``: the sums of the rows of ``x [..., n]``, added left to right, so that zeros
    after a row's last entry (padding) never change its total (NumPy's pairwise ``sum``
    groups the terms by the row's length)."""
    if not x.shape[-1]:
        return np.zeros((*x.shape[:-1], 1), dtype=x.dtype)
    return np.cumsum(x, -1)[..., -1:]


def normalise_rows(mass: np.ndarray) -> np.ndarray:
    """:func:`normalise_mass` for NumPy rows ``[..., n]``, as C-contiguous float64 (what POT's
    exact solver takes); rows without mass stay 0."""
    mass = mass.astype(np.float64, order="C")
    total = row_totals(mass)
    return mass / np.where(total > 0, total, 1.0)


def balanced_rows(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masses ``a [..., n]``, ``b [..., m]`` normalised per row, and ``b`` rescaled to ``a``'s
    total (``b * sum(a) / sum(b)``, as ``ot.emd`` does), so that the exact solver sees equal
    totals to the last bit; rows without mass stay 0."""
    a, b = normalise_rows(a), normalise_rows(b)
    total = row_totals(b)
    return a, b * (row_totals(a) / np.where(total > 0, total, 1.0))
