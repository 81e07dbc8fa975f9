"""Power means across layers (MoverScore; Rücklé et al., 2018)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ..errors import ConfigError
from .._ops import unit
from .base import Aggregator, check_layer_spec, layer_list, resolve_layers


def power_mean(x: torch.Tensor, p: float, dim: int = 0) -> torch.Tensor:
    """Element-wise power mean along ``dim``.

    ``M_p(x) = g^{-1}(mean_l g(x_l))`` with the odd power ``g(v) = sign(v)|v|^p``, so that negative
    components are defined for every real ``p != 0`` (for odd integer ``p`` this is the usual
    power mean); ``p = 1`` is the arithmetic mean, ``p = +inf`` the maximum, ``p = -inf`` the
    minimum. ``p = 0`` is rejected (the signed geometric mean is not defined at zero).
    """
    if p == math.inf:
        return x.amax(dim=dim)
    if p == -math.inf:
        return x.amin(dim=dim)
    if p == 1:
        return x.mean(dim=dim)
    if p == 0:
        raise ConfigError("power mean with p = 0 is not defined here; use p != 0")
    m = (x.sign() * x.abs().pow(p)).mean(dim=dim)
    return m.sign() * m.abs().pow(1.0 / p)


@dataclass(frozen=True)
class PowerMeans(Aggregator):
    """Concatenation of power means across layers: ``h_t = [M_{p_1}(...); ...; M_{p_n}(...)]``.

    Args:
        layers_spec: layers to aggregate; negative numbers count from the top, so the default
            ``(-5, -4, -3, -2, -1)`` is "the last five layers" of any model (MoverScore).
        powers: the exponents, concatenated in this order; MoverScore v1 uses ``(-inf, 1, inf)``
            i.e. [min, mean, max].
        normalize: L2-normalise each layer's token vectors first (MoverScore v1 does).
    """

    layers_spec: tuple[int, ...] = (-5, -4, -3, -2, -1)
    powers: tuple[float, ...] = (-math.inf, 1.0, math.inf)
    normalize: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers_spec", check_layer_spec(self.layers_spec, "power means"))
        object.__setattr__(self, "powers", tuple(self.powers))

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "PowerMeans":
        return replace(self, layers_spec=resolve_layers(self.layers_spec, num_layers))

    @property
    def layers(self) -> tuple[int, ...]:
        return self._resolved(self.layers_spec)

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        if self.normalize:
            states = unit(states)
        return torch.cat([power_mean(states, p, dim=0) for p in self.powers], dim=-1)

    def signature(self) -> str:
        ps = ",".join("inf" if p == math.inf else "-inf" if p == -math.inf else f"{p:g}" for p in self.powers)
        return f"pmeans(L{layer_list(self.layers)};p={ps}{';norm' if self.normalize else ''})"
