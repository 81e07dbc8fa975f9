"""Small tensor operations shared by several stages (a leaf module: it imports nothing of ours)."""

from __future__ import annotations

import numpy as np
import torch


def unit(vectors: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``v / max(||v||, 1e-12)`` along the last axis (a zero vector stays zero), written to
    ``out`` when given (``vectors`` itself, or a slice of a larger tensor: no second copy)."""
    norm = vectors.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return torch.div(vectors, norm, out=out)


def normalise_mass(mass: torch.Tensor) -> torch.Tensor:
    """``m_i / sum_j m_j`` over the last axis, in ``mass``'s dtype; 0 where the masses sum to 0."""
    total = mass.sum(-1, keepdim=True)
    return torch.where(total > 0, mass / torch.where(total > 0, total, torch.ones_like(total)),
                       torch.zeros_like(mass))


def normalise_rows(mass: np.ndarray) -> np.ndarray:
    """:func:`normalise_mass` for NumPy rows ``[..., n]``, as C-contiguous float64 (what POT's
    exact solver takes); rows without mass stay 0."""
    mass = mass.astype(np.float64, order="C")
    total = mass.sum(-1, keepdims=True)
    return mass / np.where(total > 0, total, 1.0)
