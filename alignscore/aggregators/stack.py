"""Several layers kept side by side, for aligners that read each layer on its own (BaryScore)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..settings import check_settings, setting
from .base import Aggregator, Vectors, layer_list, resolve_layers


def stack_layers(states: torch.Tensor) -> torch.Tensor:
    """Each layer's token vectors L2-normalised, then placed side by side in layer order::

        h_t = [u_1; ...; u_L],   u_l = H^(l)_t / |H^(l)_t|

    Every token's vector has norm ``sqrt(L)`` (a zero vector stays zero), so the unit
    normalisation the scorer applies after aggregating scales all tokens alike, by
    ``1 / sqrt(L)``: each layer's direction survives it and :func:`unstack_layers` recovers it.

    Parameters
    ----------
    states : torch.Tensor
        ``[L, B, T, D]`` hidden states of ``L`` layers.

    Returns
    -------
    torch.Tensor
        ``[B, T, L * D]``.

    Examples
    --------
    >>> states = torch.tensor([[[[3.0, 4.0]]], [[[0.0, 2.0]]]])  # 2 layers, 1 text, 1 token
    >>> stacked = stack_layers(states)
    >>> [round(x, 4) for x in stacked.flatten().tolist()]
    [0.6, 0.8, 0.0, 1.0]
    >>> scaled = stacked / stacked.norm(dim=-1, keepdim=True)  # what the scorer hands the aligner
    >>> [round(x, 4) for x in unstack_layers(scaled, 2).flatten().tolist()]
    [0.6, 0.8, 0.0, 1.0]
    """
    states = states / states.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return states.permute(1, 2, 0, 3).flatten(2)


def unstack_layers(vectors: torch.Tensor, layers: int) -> torch.Tensor:
    """``[B, T, L * D] -> [B, L, T, D]``: the layers of :func:`stack_layers`, each token's
    vector L2-normalised again (so the result does not depend on a common scale of the stack).
    ``layers`` is what the aggregator declared (:meth:`LayerStack.output`), never guessed from
    the values.

    Parameters
    ----------
    vectors : torch.Tensor
        ``[B, T, L * D]``: a stack of ``layers`` vectors per token.
    layers : int
        ``L``; it divides the width.

    Returns
    -------
    torch.Tensor
        ``[B, L, T, D]``, unit vectors.

    Examples
    --------
    >>> unstack_layers(torch.tensor([[[3.0, 4.0, 0.0, 2.0]]]), layers=2).squeeze(2).double().round(decimals=4).tolist()
    [[[0.6, 0.8], [0.0, 1.0]]]
    """
    b, t, width = vectors.shape
    if layers < 1 or width % layers:
        raise ValueError(f"token vectors of width {width} cannot be a stack of {layers} layers")
    parts = vectors.reshape(b, t, layers, width // layers).transpose(1, 2)
    return parts / parts.norm(dim=-1, keepdim=True).clamp_min(1e-12)


@dataclass(frozen=True)
class LayerStack(Aggregator):
    """The layers' unit token vectors side by side (:func:`stack_layers`): nothing is averaged,
    an aligner reads every layer back (:func:`unstack_layers`). BaryScore's aggregator: it
    computes the Wasserstein barycenter of the layers per text, where the token masses are known
    (:class:`~alignscore.aligners.barycenter.BaryScore`).

    Parameters
    ----------
    layers : tuple of int
        The layers, in order; negative numbers count from the top, so the default
        ``(-5, ..., -1)`` is "the last five layers" (BaryScore's ``last_layers=5``).

    Returns
    -------
    LayerStack
        Resolved for a model (:meth:`resolve`), called on hidden states ``[L, B, T, D]`` of its
        layers: ``[B, T, L * D]``.

    Examples
    --------
    >>> import torch
    >>> agg = LayerStack(layers=(-2, -1)).resolve(6, None)
    >>> agg.layers_read(), tuple(agg(torch.randn(2, 1, 3, 4)).shape)
    ((5, 6), (1, 3, 8))
    """

    layers: tuple[int, ...] = setting((-5, -4, -3, -2, -1), aliases=("layers_spec",))

    def __post_init__(self) -> None:
        check_settings(self)

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "LayerStack":
        return replace(self, layers=resolve_layers(self.layers, num_layers))

    def layers_read(self) -> tuple[int, ...]:
        return self._resolved(self.layers)

    def output(self) -> Vectors:
        return Vectors("stack", len(self.layers))

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return stack_layers(states)

    def signature(self) -> str:
        return f"stack(L{layer_list(self.layers_read())};norm)"
