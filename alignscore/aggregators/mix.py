"""A learned mix of layers: token vector = softmax-weighted sum of the layers' hidden states."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import torch

from ..settings import SettingError, check_settings, setting
from .base import MixOfLayers, layer_list

#: a logit this far above every other one gives that layer weight exactly 1 (``exp(-1e4)`` is 0
#: in float32 and float64), so the mix is exactly the single layer
ONE_HOT = 1e4


def mix_layers(states: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """The softmax mix of layers::

        h_t = sum_k c_k H^(k)_t,    c = softmax(w)

    A logit of ``-inf`` gives its layer weight 0; logits of ``+inf`` share the whole weight
    equally (the limit of the softmax), so ``(-inf, inf, -inf)`` or ``(0, inf, 0)`` is exactly
    the second layer, as is a logit :data:`ONE_HOT` above the others: ``c`` is exactly one-hot
    and ``h_t`` exactly that layer's vector (the other terms are ``0 * H``, and ``x + 0 = x``).
    Pure torch: differentiable in ``states`` and (finite) ``logits``.

    Parameters
    ----------
    states : torch.Tensor
        ``[L, ..., D]`` hidden states of ``L`` layers.
    logits : torch.Tensor
        ``[L]`` the mixing logits ``w``.

    Returns
    -------
    torch.Tensor
        ``[..., D]``.

    Examples
    --------
    >>> states = torch.tensor([[[1.0, 0.0]], [[0.0, 2.0]]])  # 2 layers, 1 token
    >>> mix_layers(states, torch.zeros(2)).tolist()  # equal weights: the mean
    [[0.5, 1.0]]
    >>> mix_layers(states, torch.tensor([0.0, ONE_HOT])).tolist()  # exactly the second layer
    [[0.0, 2.0]]
    >>> mix_layers(states, torch.tensor([0.0, math.inf])).tolist()
    [[0.0, 2.0]]
    """
    weights = layer_weights(logits).to(states.dtype)
    return torch.tensordot(weights, states, dims=([0], [0])) if states.shape[0] > 1 else weights[0] * states[0]


def layer_weights(logits: torch.Tensor) -> torch.Tensor:
    """``c = softmax(w)`` in float64, where logits of ``inf`` share the whole weight equally.

    Examples
    --------
    >>> layer_weights(torch.tensor([0.0, math.inf, -math.inf])).tolist()
    [0.0, 1.0, 0.0]
    """
    logits = logits.double()
    top = torch.isposinf(logits)
    return top.double() / top.sum() if bool(top.any()) else torch.softmax(logits, dim=0)


def digest(values: tuple[float, ...]) -> str:
    """A short digest of numbers (8 hex digits of SHA-1 over their exact ``repr``): two runs with
    the same digest have the same weights.

    Examples
    --------
    >>> digest((0.0, 1.0)) == digest((0.0, 1.0)), digest((0.0, 1.0)) == digest((0.0, 1.0000001))
    (True, False)
    """
    return hashlib.sha1(",".join(map(repr, map(float, values))).encode()).hexdigest()[:8]


@dataclass(frozen=True)
class LayerMix(MixOfLayers):
    """``h_t = sum_k softmax(w)_k H^(k)_t`` over :attr:`layers` (the scorer then scales each
    token's vector to unit length). The weights are given as logits ``w`` (one per layer, any
    real number, ``-inf`` or ``inf``: :func:`mix_layers`; only their differences matter);
    ``None`` mixes the layers equally. ``inf`` for one layer, or a logit :data:`ONE_HOT` above
    the others, makes the mix exactly that layer. ``alignscore fit`` learns
    them; by hand they are ordinary settings (``--aggregator mix --layers 2-4 --mix-weights
    0,1,0``). The signature shows the layers and a digest of the weights (:func:`digest`).

    Parameters
    ----------
    layers : tuple of int
        The layers mixed (negative numbers count from the top).
    mix_weights : tuple of float or None
        The logits, one per layer, in the order of ``layers``.

    Examples
    --------
    >>> LayerMix((1, 2), (0.0, 0.0)).signature()
    'mix(L1,2;w=14c01b6f)'
    >>> LayerMix((1, 2), (0.0,))
    Traceback (most recent call last):
    ...
    alignscore.settings.SettingError: mix_weights: 1 weight(s) for 2 layer(s): give one per layer
    """

    layers: tuple[int, ...] = setting((-5, -4, -3, -2, -1), aliases=("layers_spec",))
    mix_weights: tuple[float, ...] | None = setting(None, infinite=True, metavar="LIST", help=(
        "mix: the softmax logits of its layers, one per layer of --layers (only their differences matter; -inf: "
        "weight 0; inf, or 1e4 above the others: exactly that layer). Default: equal weights."))

    def __post_init__(self) -> None:
        check_settings(self)
        if self.mix_weights is not None and len(self.mix_weights) != len(self.layers):
            raise SettingError("mix_weights", f"{len(self.mix_weights)} weight(s) for {len(self.layers)} layer(s): "
                                              "give one per layer")
        if self.mix_weights is not None and all(w == -math.inf for w in self.mix_weights):
            raise SettingError("mix_weights", "every weight is -inf: at least one layer needs a weight above -inf")

    @property
    def logits(self) -> tuple[float, ...]:
        """The logits, equal ones where none were given."""
        return self.mix_weights if self.mix_weights is not None else (0.0,) * len(self.layers)

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return mix_layers(states, torch.tensor(self.logits, dtype=torch.float64, device=states.device))

    def signature(self) -> str:
        return f"mix(L{layer_list(self.layers_read())};w={digest(self.logits)})"
