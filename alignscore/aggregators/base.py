"""The aggregator stage: hidden states of several layers -> one vector per token."""

from __future__ import annotations

from abc import ABC, abstractmethod
from numbers import Integral
from typing import Any

import torch

from ..errors import ConfigError


def check_layer(k: Any, what: str = "layer") -> int:
    """``k`` as an int when it is an integer (``True``, ``"4"`` and ``4.0`` are not)."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise ConfigError(f"{what} must be an integer, not {k!r}")
    return int(k)


def check_layer_spec(spec: Any, owner: str) -> tuple[int, ...]:
    """A non-empty sequence of layer numbers as a tuple of ints."""
    if isinstance(spec, (str, bytes)) or not hasattr(spec, "__iter__"):
        raise ConfigError(f"the {owner} aggregator needs a list of layers, not {spec!r}")
    layers = tuple(check_layer(k) for k in spec)
    if not layers:
        raise ConfigError(f"the {owner} aggregator needs at least one layer")
    return layers


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
