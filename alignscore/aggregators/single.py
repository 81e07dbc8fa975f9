"""One layer's hidden states (BERTScore)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ConfigError
from .base import Aggregator, check_layer


@dataclass(frozen=True)
class SingleLayer(Aggregator):
    """``h_t = H^{(k)}_t``: the token vectors of layer ``k`` (0 = embeddings).

    ``layer=None`` takes the encoder's default layer (BERTScore Appendix B); a negative layer
    counts from the top (-1: the last block).
    """

    layer: int | None = None

    def __post_init__(self) -> None:
        if self.layer is not None:
            object.__setattr__(self, "layer", check_layer(self.layer))

    def resolve(self, num_layers: int, default_layer: int | None = None) -> int:
        k = self.layer if self.layer is not None else default_layer
        if k is None:
            raise ConfigError("no layer given and the model has no default layer")
        if k < 0:
            k += num_layers + 1
        if not 0 <= k <= num_layers:
            raise ConfigError(f"layer {self.layer} does not exist: the model has layers 0..{num_layers}")
        return k

    def layers(self, num_layers: int, default_layer: int | None = None) -> list[int]:
        return [self.resolve(num_layers, default_layer)]

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return states[0]

    def signature(self, num_layers: int, default_layer: int | None = None) -> str:
        return f"L{self.resolve(num_layers, default_layer)}"
