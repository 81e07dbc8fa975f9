"""The aggregator stage: hidden states of several layers -> one vector per token.

An aggregator names its layers as the user gave them (``None`` for "the model's default",
negative numbers counting from the top); :meth:`Aggregator.resolve` turns them into layer numbers
of one model, once, when a composition is built for that model. After that :attr:`layers` and
:meth:`signature` need nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from numbers import Integral
from typing import Any, Sequence

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


def resolve_layers(spec: Sequence[int], num_layers: int) -> tuple[int, ...]:
    """Layer numbers of a model with ``num_layers`` blocks; negative numbers count from the top
    (-1 is the last block), so ``(-5, ..., -1)`` is "the last five layers" of any model."""
    out = []
    for k in spec:
        r = k + num_layers + 1 if k < 0 else k
        if not 0 <= r <= num_layers:
            raise ConfigError(f"layer {k} does not exist: the model has layers 0..{num_layers}")
        out.append(r)
    return tuple(out)


def layer_list(layers: Sequence[int]) -> str:
    return ",".join(map(str, layers))


class Aggregator(ABC):
    """Turns ``[L, B, T, D]`` hidden states of :attr:`layers` into ``[B, T, D']`` token vectors
    (the engine scales them to unit length). Every token is aggregated on its own, so padding
    never changes a real token's vector."""

    @abstractmethod
    def resolve(self, num_layers: int, default_layer: int | None = None) -> "Aggregator":
        """This aggregator with absolute layers for a model of ``num_layers`` blocks whose
        default layer (BERTScore's table) is ``default_layer``; raises ConfigError when a layer
        does not exist or none is given and there is no default."""

    @property
    @abstractmethod
    def layers(self) -> tuple[int, ...]:
        """The layers read, in the order of the states :meth:`__call__` receives (resolved)."""

    @abstractmethod
    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        """Aggregate ``states[l]`` (one entry per layer of :attr:`layers`, same order)."""

    @abstractmethod
    def signature(self) -> str:
        """What pins this aggregator's numbers, its layers included (resolved)."""

    def _resolved(self, spec: Sequence[int]) -> tuple[int, ...]:
        if any(k < 0 for k in spec):
            raise ConfigError(f"layers {layer_list(spec)} count from the top of a model: resolve the "
                              f"aggregator against one first")
        return tuple(spec)
