"""Power means across layers (MoverScore; Rücklé et al., 2018)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from numbers import Real

import torch

from ..errors import ConfigError
from ..settings import SettingError, check_settings, setting
from .._ops import unit
from .base import Aggregator, Vectors, layer_list, resolve_layers


def check_power(p: object) -> float:
    """``p`` as a float when a power mean is defined for it: ``+inf``, ``-inf`` or a finite
    ``p > 0``. NaN, ``p = 0`` and finite ``p < 0`` are refused: with signed components, the
    signed geometric mean (``p = 0``) and ``sign(v)|v|^p`` for ``p < 0`` are infinite at a
    zero component, and where the signed terms cancel ``|m|^(1/p)`` is infinite too.

    Parameters
    ----------
    p : object
        The exponent as given.

    Returns
    -------
    float
        ``p``; a :class:`~alignscore.errors.ConfigError` where it is refused.

    Examples
    --------
    >>> check_power(3), check_power(float("-inf"))
    (3.0, -inf)
    >>> check_power(0)
    Traceback (most recent call last):
    alignscore.errors.ConfigError: power-mean exponent 0 is not defined for signed hidden states; use ...
    """
    if isinstance(p, bool) or not isinstance(p, Real) or math.isnan(p):
        raise ConfigError(f"power-mean exponent {p!r} is not a number; use -inf, inf or a number > 0")
    p = float(p)
    if not (p > 0 or p == -math.inf):
        raise ConfigError(f"power-mean exponent {p:g} is not defined for signed hidden states; "
                          "use -inf (min), inf (max) or a number > 0 (1 = mean)")
    return p


def power_mean(x: torch.Tensor, p: float, dim: int = 0) -> torch.Tensor:
    """Element-wise power mean along ``dim``::

        M_p(x) = g^{-1}( mean_l g(x_l) ),   g(v) = sign(v) |v|^p

    The odd power ``g`` defines negative components (for odd integer ``p`` it is the usual power
    mean); ``p = 1`` is the arithmetic mean, ``p = +inf`` the maximum, ``p = -inf`` the minimum.
    Defined for those and for every finite ``p > 0`` (:func:`check_power` refuses the rest).
    Computed on ``x / s`` with ``s = max_l |x_l|``: ``M_p(x) = s M_p(x / s)`` (0 where
    ``s = 0``), so that a large ``p`` neither underflows nor overflows (the largest term is
    ``|1|^p = 1``).

    Parameters
    ----------
    x : torch.Tensor
        Values, e.g. ``[L, B, T, D]`` hidden states of ``L`` layers.
    p : float
        The exponent: ``-inf``, ``inf`` or a finite number ``> 0``.
    dim : int
        The axis averaged over.

    Returns
    -------
    torch.Tensor
        ``x`` without ``dim``.

    Raises
    ------
    ConfigError
        ``p`` is NaN, 0 or a finite negative number.

    Examples
    --------
    >>> x = torch.tensor([[1.0, -2.0], [3.0, 4.0], [-5.0, 0.5]])  # 3 layers, 2 components
    >>> power_mean(x, -math.inf).tolist(), power_mean(x, math.inf).tolist()  # min, max
    ([-5.0, -2.0], [3.0, 4.0])
    >>> [round(v, 4) for v in power_mean(x, 1).tolist()]  # the mean
    [-0.3333, 0.8333]
    >>> [round(v, 4) for v in power_mean(x, 3).tolist()]  # the real cube root of the mean of cubes
    [-3.1858, 2.6547]
    >>> [round(v, 4) for v in power_mean(x, 1000.0).tolist()]  # large p: the largest magnitude
    [-4.9945, 3.9956]
    """
    p = check_power(p)
    if p == math.inf:
        return x.amax(dim=dim)
    if p == -math.inf:
        return x.amin(dim=dim)
    if p == 1:
        return x.mean(dim=dim)
    s = x.abs().amax(dim=dim, keepdim=True)
    y = x / torch.where(s > 0, s, torch.ones_like(s))
    m = (y.sign() * y.abs().pow(p)).mean(dim=dim)
    return s.squeeze(dim) * m.sign() * m.abs().pow(1.0 / p)


def _shortest(p: float) -> str:
    """The shortest text that reads back as ``p`` ("1", "2.5", "1e-300", "inf", "-inf")."""
    text = repr(p)
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class PowerMeans(Aggregator):
    """Concatenation of power means across layers: ``h_t = [M_{p_1}(...); ...; M_{p_n}(...)]``.

    Parameters
    ----------
    layers : tuple of int
        Layers to aggregate; negative numbers count from the top, so the default
        ``(-5, -4, -3, -2, -1)`` is "the last five layers" of any model (MoverScore).
    powers : tuple of float
        The exponents, concatenated in this order; MoverScore v1 uses ``(-inf, 1, inf)`` i.e.
        [min, mean, max]. Each is ``-inf``, ``inf`` or a finite number > 0 (see
        :func:`power_mean`); others raise :class:`~alignscore.errors.ConfigError` here.
    normalize : bool
        L2-normalise each layer's token vectors first (MoverScore v1 does).

    Returns
    -------
    PowerMeans
        Resolved for a model (:meth:`resolve`), called on hidden states ``[L, B, T, D]`` of its
        layers: ``[B, T, len(powers) * D]``.

    Examples
    --------
    The mean and the maximum of the last two of six layers, side by side:

    >>> import torch
    >>> agg = PowerMeans(layers=(-2, -1), powers=(1.0, float("inf")), normalize=False).resolve(6, None)
    >>> agg.layers_read()
    (5, 6)
    >>> states = torch.arange(24.0).reshape(2, 1, 3, 4)   # [L, B, T, D]
    >>> agg(states)[0, 0].tolist()
    [6.0, 7.0, 8.0, 9.0, 12.0, 13.0, 14.0, 15.0]
    """

    layers: tuple[int, ...] = setting((-5, -4, -3, -2, -1), aliases=("layers_spec",), metavar="LIST", help=(
        "Layers of pmeans, routing or stack, e.g. '-5,-4,-3,-2,-1' (the default: the last five) or '8-12'."))
    powers: tuple[float, ...] = setting((-math.inf, 1.0, math.inf), infinite=True, metavar="LIST", help=(
        "Power-mean exponents of pmeans, e.g. '-inf,1,inf' (the default: min, mean, max); each -inf, inf or > 0."))
    normalize: bool = setting(True, help="pmeans, routing: L2-normalise each layer's token vectors first (default).")

    def __post_init__(self) -> None:
        check_settings(self)
        try:
            object.__setattr__(self, "powers", tuple(check_power(p) for p in self.powers))
        except ConfigError as exc:
            raise SettingError("powers", str(exc)) from None

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "PowerMeans":
        return replace(self, layers=resolve_layers(self.layers, num_layers))

    def layers_read(self) -> tuple[int, ...]:
        return self._resolved(self.layers)

    def output(self) -> Vectors:
        return Vectors("concat", len(self.layers))

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        if self.normalize:
            states = unit(states)
        return torch.cat([power_mean(states, p, dim=0) for p in self.powers], dim=-1)

    def signature(self) -> str:
        ps = ",".join(map(_shortest, self.powers))
        return f"pmeans(L{layer_list(self.layers_read())};p={ps}{';norm' if self.normalize else ''})"
