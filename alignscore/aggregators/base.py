"""The aggregator stage: hidden states of several layers -> one vector per token.

An aggregator names its layers as the user gave them (``None`` for "the model's default",
negative numbers counting from the top); :meth:`Aggregator.resolve` turns them into layer numbers
of one model, once, when a composition is built for that model. After that :attr:`layers` and
:meth:`signature` need nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Sequence

import torch

from ..errors import ConfigError
from ..settings import SettingError


def resolve_layers(spec: Sequence[int], num_layers: int, setting: str = "layers") -> tuple[int, ...]:
    """Layer numbers of a model with ``num_layers`` blocks; negative numbers count from the top
    (-1 is the last block), so ``(-5, ..., -1)`` is "the last five layers" of any model. A
    layer the model does not have is a :class:`~alignscore.settings.SettingError` of ``setting``.

    Parameters
    ----------
    spec : sequence of int
        Layers as the user gave them.
    num_layers : int
        The model's blocks (its layers are ``0..num_layers``, 0 the embeddings).
    setting : str
        The option an error names.

    Returns
    -------
    tuple of int
        Absolute layers, in the order given.

    Examples
    --------
    >>> resolve_layers((-1, 0, 5), num_layers=12)
    (12, 0, 5)
    >>> resolve_layers((13,), num_layers=12)
    Traceback (most recent call last):
    alignscore.settings.SettingError: layers: layer 13 does not exist: the model has layers 0..12 (...)
    """
    out = []
    for k in spec:
        r = k + num_layers + 1 if k < 0 else k
        if not 0 <= r <= num_layers:
            raise SettingError(setting, f"layer {k} does not exist: the model has layers 0..{num_layers} "
                                        f"(or -{num_layers}..-1 from the top)")
        out.append(r)
    return tuple(out)


def layer_list(layers: Sequence[int]) -> str:
    """Layers as a signature writes them.

    Parameters
    ----------
    layers : sequence of int
        Layer numbers.

    Returns
    -------
    str
        Joined by commas.

    Examples
    --------
    >>> layer_list((9, 10, 11))
    '9,10,11'
    """
    return ",".join(map(str, layers))


@dataclass(frozen=True)
class Vectors:
    """What an aggregator hands on per token, so that the parts after it can say what they need
    before anything runs: ``kind`` is ``"layer"`` (one layer's vector, :class:`SingleLayer`),
    ``"mix"`` (one vector mixed from several layers, of a layer's width), ``"concat"`` (several
    vectors of a layer's width concatenated) or ``"stack"`` (``layers`` unit vectors, one per
    layer, side by side: an aligner may read each layer back); ``layers`` is how many layers
    it reads.

    Parameters
    ----------
    kind : str
        ``"layer"``, ``"mix"``, ``"concat"`` or ``"stack"``.
    layers : int
        How many layers the vectors are made from.

    Examples
    --------
    >>> from alignscore import LayerMix, SingleLayer
    >>> str(LayerMix((1, 2, 3)).output()), SingleLayer(9).output().one_layer
    ('one vector mixed from 3 layers', True)
    """

    kind: str
    layers: int

    @property
    def one_layer(self) -> bool:
        """One layer's vectors (what a baseline row or a remapping is for)."""
        return self.kind == "layer"

    def __str__(self) -> str:
        return {"layer": "one layer's vectors", "mix": f"one vector mixed from {self.layers} layers",
                "concat": f"a concatenation of means of {self.layers} layers",
                "stack": f"a stack of {self.layers} layers"}.get(self.kind, self.kind)


class Aggregator(ABC):
    """Turns ``[L, B, T, D]`` hidden states of :attr:`layers` into ``[B, T, D']`` token vectors
    (the engine scales them to unit length). Every token is aggregated on its own, so padding
    never changes a real token's vector.

    Parameters
    ----------
    None here: each aggregator is a frozen dataclass whose fields are its settings (the layers
    it reads, ...), checked where it is built.

    Examples
    --------
    >>> from alignscore import SingleLayer
    >>> layer = SingleLayer(-2).resolve(num_layers=12)   # the second layer from the top
    >>> layer.layers_read(), layer.signature(), layer(torch.ones(1, 4, 3, 8)).shape
    ((11,), 'L11', torch.Size([4, 3, 8]))
    """

    @abstractmethod
    def resolve(self, num_layers: int, default_layer: int | None = None) -> "Aggregator":
        """This aggregator with absolute layers for a model of ``num_layers`` blocks whose
        default layer (BERTScore's table) is ``default_layer``; raises ConfigError when a layer
        does not exist or none is given and there is no default."""

    @abstractmethod
    def layers_read(self) -> tuple[int, ...]:
        """The layers read, in the order of the states :meth:`__call__` receives (resolved)."""

    @abstractmethod
    def output(self) -> Vectors:
        """What each token's vector is (known before any model is loaded)."""

    @property
    def takes_default(self) -> bool:
        """Whether it reads the model's default layer (none given), known once resolved."""
        return False

    @abstractmethod
    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        """Aggregate ``states[l]`` (one entry per layer of :attr:`layers`, same order)."""

    @abstractmethod
    def signature(self) -> str:
        """What pins this aggregator's numbers, its layers included (resolved)."""

    @staticmethod
    def _resolved(spec: Sequence[int]) -> tuple[int, ...]:
        if any(k < 0 for k in spec):
            raise ConfigError(f"layers {layer_list(spec)} count from the top of a model: resolve the "
                              f"aggregator against one first")
        return tuple(spec)


class MixOfLayers(Aggregator):
    """An aggregator that makes one vector of a layer's width from the layers of its
    ``layers`` setting (:class:`~alignscore.aggregators.routing.Routing`,
    :class:`~alignscore.aggregators.mix.LayerMix`): resolving reads that setting.

    Parameters
    ----------
    layers : tuple of int
        Declared by each subclass (with its other settings).

    Examples
    --------
    >>> from alignscore import LayerMix
    >>> LayerMix((-2, -1)).resolve(num_layers=12).layers_read()
    (11, 12)
    """

    layers: tuple[int, ...]

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "MixOfLayers":
        return replace(self, layers=resolve_layers(self.layers, num_layers))  # type: ignore[type-var]

    def layers_read(self) -> tuple[int, ...]:
        return self._resolved(self.layers)

    def output(self) -> Vectors:
        return Vectors("mix", len(self.layers))
