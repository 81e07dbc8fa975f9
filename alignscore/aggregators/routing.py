"""Routing aggregation across layers (MoverScore appendix A.2): KDE clustering by mean shift."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ConfigError
from ..settings import check_settings, setting
from .._ops import unit
from .base import MixOfLayers, layer_list

KERNELS = ("gaussian", "epanechnikov")


def _kernel(x: torch.Tensor, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(k(x), -k'(x))`` of a kernel profile: Gaussian ``k(x) = exp(-x / 2)`` (so ``-k' = k / 2``)
    or Epanechnikov ``k(x) = 1 - x`` on ``[0, 1)``, 0 beyond (so ``-k' = 1[x < 1]``)."""
    if kind == "gaussian":
        k = torch.exp(-x / 2)
        return k, k / 2
    inside = (x < 1).to(x.dtype)
    return (1 - x).clamp_min(0), inside


def route(z: torch.Tensor, kernel: str = "gaussian", bandwidth: float = 1.0, alpha: float = 1.0,
          max_iter: int = 50, tol: float = 1e-6) -> torch.Tensor:
    """Aggregate ``z [L, ..., D]`` (one vector per layer) into ``v [..., D]`` by routing.

    For every token independently, with routing weights ``g_l`` over the layers (initially 0),
    distances ``d_l = ||v - z_l||^2 / h^2``, a kernel profile ``k`` and ``v`` starting at the layer
    mean, repeat (MoverScore appendix A.2, Algorithm 1)::

        c_l  = softmax_l(g)                                 (line 4: g <- softmax(g))
        v   <- sum_l c_l s(d_l) z_l / sum_l c_l s(d_l)      (line 6: mean shift, s = -k')
        g_l <- c_l + alpha * k(d_l)                         (line 7, d_l at the new v)
        loss = log sum_l c_l k(d_l)                         (line 8)

    until ``|loss - previous loss| < tol`` for that token (it is then frozen) or ``max_iter``
    rounds. Made well-defined where the algorithm is loose: the mean-shift denominator carries
    ``c`` too, so ``v`` is a convex combination of the layers; ``v`` starts at the mean. Because
    line 4 squashes ``g`` every round, ``g`` stays in ``[0, 1 + alpha]`` and the iteration
    settles. Tokens never interact, so the result does not depend on batching. A token whose
    mean-shift weights are all 0 (Epanechnikov, every layer further than ``h``) keeps its ``v``.

    Parameters
    ----------
    z : torch.Tensor
        ``[L, ..., D]``: each token's vector at ``L`` layers.
    kernel : str
        ``"gaussian"`` (``k(x) = exp(-x / 2)``) or ``"epanechnikov"`` (``k(x) = max(1 - x, 0)``).
    bandwidth : float
        ``h``.
    alpha : float
        The step size of the logit update.
    max_iter, tol : int, float
        The stopping rule, per token.

    Returns
    -------
    torch.Tensor
        ``v [..., D]``.

    Examples
    --------
    Three layers agree and one is an outlier: routing moves towards the three, further than
    their mean does.

    >>> z = torch.tensor([[1.0, 0.0], [0.9, 0.1], [1.0, 0.1], [-1.0, 1.0]]).unsqueeze(1)  # [L=4, 1, D=2]
    >>> [round(x, 4) for x in z.mean(0).flatten().tolist()]
    [0.475, 0.3]
    >>> [round(x, 4) for x in route(z).flatten().tolist()]
    [0.9452, 0.0769]
    """
    if kernel not in KERNELS:
        raise ConfigError(f"unknown routing kernel {kernel!r}; choose one of: {', '.join(KERNELS)}")
    scale = 1.0 / (bandwidth * bandwidth)
    z_sq = (z * z).sum(-1)

    def dist(v: torch.Tensor) -> torch.Tensor:  # ||v - z_l||^2 / h^2 via dot products: [L, ...]
        d = (v * v).sum(-1) + z_sq - 2 * torch.einsum("...d,l...d->l...", v, z)
        return d.clamp_min(0) * scale

    v = z.mean(dim=0)
    g = torch.zeros(z.shape[:-1], dtype=z.dtype, device=z.device)
    active = torch.ones(z.shape[1:-1], dtype=torch.bool, device=z.device)
    prev = torch.full(z.shape[1:-1], float("inf"), dtype=z.dtype, device=z.device)
    for _ in range(max_iter):
        c = torch.softmax(g, dim=0)
        _, s = _kernel(dist(v), kernel)
        w = c * s
        total = w.sum(dim=0)
        shifted = torch.einsum("l...,l...d->...d", w, z) / total.clamp_min(1e-30).unsqueeze(-1)
        keep = ~active | (total <= 0)
        v = torch.where(keep.unsqueeze(-1), v, shifted)
        k, _ = _kernel(dist(v), kernel)
        g = torch.where(active, c + alpha * k, g)
        loss = torch.log((c * k).sum(dim=0).clamp_min(1e-30))
        active = active & ((loss - prev).abs() >= tol)
        prev = torch.where(active, loss, prev)
        if not bool(active.any()):
            break
    return v


@dataclass(frozen=True)
class Routing(MixOfLayers):
    """Routing over a set of layers (MoverScore appendix A.2): each token's vector is the
    mode that mean-shift KDE clustering finds among its layer vectors (see :func:`route`).

    Parameters
    ----------
    layers : tuple of int
        Layers to aggregate; negative numbers count from the top, so the default is "the last
        five layers" of any model (as for MoverScore's power means).
    kernel : str
        ``"gaussian"`` or ``"epanechnikov"``.
    bandwidth : float
        ``h``; distances are divided by ``h^2``.
    routing_alpha : float
        Step size of the logit update.
    routing_iter : int
        Iterations per token, at most.
    routing_tol : float
        A token stops when its loss changes by less than this.
    normalize : bool
        L2-normalise each layer's token vectors first, so that layers of different scales are
        comparable (as MoverScore does before power means).

    Returns
    -------
    Routing
        Resolved for a model (:meth:`resolve`), called on hidden states ``[L, B, T, D]`` of its
        layers: ``[B, T, D]``.

    Examples
    --------
    >>> import torch
    >>> agg = Routing(layers=(-2, -1)).resolve(6, None)
    >>> agg.layers_read(), tuple(agg(torch.randn(2, 1, 3, 4)).shape)
    ((5, 6), (1, 3, 4))
    """

    layers: tuple[int, ...] = setting((-5, -4, -3, -2, -1), aliases=("layers_spec",))
    kernel: str = setting("gaussian", choices=KERNELS, help="routing: the kernel of the mean shift.")
    bandwidth: float = setting(1.0, gt=0, help="routing: the kernel's bandwidth h.")
    routing_alpha: float = setting(1.0, gt=0, aliases=("alpha",),
                                   help="routing: the step size of the logit update.")
    routing_iter: int = setting(50, ge=1, aliases=("max_iter",), help="routing: iterations per token, at most.")
    routing_tol: float = setting(1e-6, ge=0, aliases=("tol",), help="routing: a token stops below this change.")
    normalize: bool = setting(True)

    def __post_init__(self) -> None:
        check_settings(self)

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        if self.normalize:
            states = unit(states)
        return route(states, self.kernel, self.bandwidth, self.routing_alpha, self.routing_iter, self.routing_tol)

    def signature(self) -> str:
        return (f"routing(L{layer_list(self.layers_read())};{self.kernel},h={self.bandwidth:g},"
                f"a={self.routing_alpha:g},it={self.routing_iter},tol={self.routing_tol:g}"
                f"{';norm' if self.normalize else ''})")
