"""Several layers kept side by side, for aligners that read each layer on its own (BaryScore)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..errors import ConfigError
from ..settings import setting
from .base import Aggregator, check_layer_spec, layer_list, resolve_layers


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

    Raises:
        ConfigError: ``vectors`` are not a stack of ``layers`` unit vectors: the width is not a
            multiple of ``layers``, a token's ``layers`` parts differ in norm (another
            aggregator, or fewer layers), or a finer split has parts of one norm too (a stack of
            more layers: split into ``layers * p`` parts, ``p`` a prime factor of ``D``).
    """
    b, t, width = vectors.shape
    hint = f"use the 'stack' aggregator with {layers} layers"
    if layers < 1 or width % layers:
        raise ConfigError(f"token vectors of width {width} are not a stack of {layers} layers: {hint}")
    if not _even_parts(vectors, layers):
        raise ConfigError(f"token vectors are not a stack of {layers} unit-normalised layers: {hint}")
    finer = [layers * p for p in _prime_factors(width // layers)]
    if b * t and any(_even_parts(vectors, n) for n in finer):
        raise ConfigError(f"token vectors look like a stack of more than {layers} layers: {hint}")
    parts = vectors.reshape(b, t, layers, width // layers).transpose(1, 2)
    return parts / parts.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _even_parts(vectors: torch.Tensor, n: int) -> bool:
    """Whether every token's vector splits into ``n`` consecutive parts of one norm (to 1e-3)."""
    b, t, width = vectors.shape
    norms = vectors.reshape(b, t, n, width // n).norm(dim=-1)
    top = norms.amax(dim=-1, keepdim=True)
    return not bool(((top - norms) > 1e-3 * top).any())


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    return out + ([n] if n > 1 else [])


@dataclass(frozen=True)
class LayerStack(Aggregator):
    """The layers' unit token vectors side by side (:func:`stack_layers`): nothing is averaged,
    an aligner reads every layer back (:func:`unstack_layers`). BaryScore's aggregator: it
    computes the Wasserstein barycenter of the layers per text, where the token masses are known
    (:class:`~alignscore.aligners.barycenter.BaryScore`).

    Args:
        layers_spec: the layers, in order; negative numbers count from the top, so the default
            ``(-5, ..., -1)`` is "the last five layers" (BaryScore's ``last_layers=5``).
    """

    layers_spec: tuple[int, ...] = setting((-5, -4, -3, -2, -1), flag="--layers")

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers_spec", check_layer_spec(self.layers_spec, "stack"))

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "LayerStack":
        return replace(self, layers_spec=resolve_layers(self.layers_spec, num_layers))

    @property
    def layers(self) -> tuple[int, ...]:
        return self._resolved(self.layers_spec)

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return stack_layers(states)

    def signature(self) -> str:
        return f"stack(L{layer_list(self.layers)};norm)"
