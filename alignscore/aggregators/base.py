"""The aggregator stage: hidden states of several layers -> one vector per token."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from ..errors import ConfigError


def resolve_layers(spec: tuple[int, ...], num_layers: int) -> list[int]:
    """Layer numbers of a model with ``num_layers`` blocks; negative numbers count from the top
    (-1 is the last block), so ``(-5, ..., -1)`` is "the last five layers" of any model."""
    out = []
    for k in spec:
        r = k + num_layers + 1 if k < 0 else k
        if not 0 <= r <= num_layers:
            raise ConfigError(f"layer {k} does not exist: the model has layers 0..{num_layers}")
        out.append(r)
    return out


class Aggregator(ABC):
    """Turns ``[L, B, T, D]`` hidden states of :meth:`layers` into ``[B, T, D']`` token vectors."""

    @abstractmethod
    def layers(self, num_layers: int, default_layer: int | None = None) -> list[int]:
        """The layers this aggregator reads, for a model with ``num_layers`` blocks."""

    @abstractmethod
    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        """Aggregate ``states[l]`` (one entry per layer of :meth:`layers`, same order)."""

    @abstractmethod
    def signature(self, num_layers: int, default_layer: int | None = None) -> str:
        """What pins this aggregator's numbers, with its layers resolved."""
