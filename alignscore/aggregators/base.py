"""The aggregator stage: hidden states of several layers -> one vector per token."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch


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
