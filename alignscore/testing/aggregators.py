"""The promises of the aggregator stage, checked on a part (:func:`check_aggregator`)."""

from __future__ import annotations

import torch

from ..aggregators import AGGREGATORS
from ..aggregators.base import Aggregator
from ..composition import Composition
from .promises import call, check_signature, fail, round_trip, tolerance


def check_aggregator(aggregator: Aggregator, *, dtype: torch.dtype = torch.float32, seed: int = 0,
                     num_layers: int = 6, default_layer: int | None = 3, atol: float | None = None) -> None:
    """Check the promises of an aggregator (:class:`~alignscore.aggregators.base.Aggregator`).

    The aggregator is resolved for a model of ``num_layers`` blocks, then given random hidden
    states ``[L, B, T, D]`` of its layers. Promises: *layers* resolve to layer numbers of the
    model; the output is ``[B, T, D']`` and *finite*; *every token is aggregated on its own*
    (its vector alone, with other neighbours, other padding or in another order is the same);
    *spec round trip* and a *stable signature* (of the resolved aggregator).

    Parameters
    ----------
    aggregator : Aggregator
        The part to check (unresolved, as a user writes it).
    dtype : torch.dtype
        The dtype of the hidden states.
    seed : int
        Seed of the random states.
    num_layers, default_layer : int
        The model it is resolved for: its blocks, and its default layer (``None``: none).
    atol : float, optional
        Allowed difference between two computations of a vector entry; default
        :func:`tolerance` of ``dtype``.

    Returns
    -------
    None
        As :func:`~alignscore.testing.check_aligner`: an :class:`AssertionError` names the
        broken promise.

    Examples
    --------
    >>> from alignscore.aggregators import PowerMeans
    >>> check_aggregator(PowerMeans(layers=(-2, -1)))
    """
    tol = tolerance(dtype) if atol is None else atol
    resolved = call("layers", f"resolve({num_layers}, {default_layer})", aggregator.resolve, num_layers, default_layer)
    layers = tuple(resolved.layers_read())
    if not layers or not all(isinstance(k, int) and 0 <= k <= num_layers for k in layers):
        raise fail("layers", f"resolved for {num_layers} blocks, the layers are {layers!r}, not numbers in "
                              f"0..{num_layers}")
    gen = torch.Generator().manual_seed(seed)
    b, t, d = 3, 5, 8
    states = (3 * torch.randn(len(layers), b, t, d, generator=gen, dtype=torch.float64)).to(dtype)
    out = call("outputs", f"__call__ on states {tuple(states.shape)}", resolved, states)
    if not isinstance(out, torch.Tensor) or out.dim() != 3 or tuple(out.shape[:2]) != (b, t):
        raise fail("outputs", f"states {tuple(states.shape)} gave {getattr(out, 'shape', type(out))}, not "
                               f"[{b}, {t}, D'] (one vector per token)")
    if not bool(torch.isfinite(out).all()):
        raise fail("finite vectors", "finite hidden states gave NaN or infinity")

    def same(promise: str, got: torch.Tensor, want: torch.Tensor, what: str) -> None:
        if not isinstance(got, torch.Tensor):
            raise fail(promise, f"a {type(got).__name__} instead of vectors {what}")
        diff = (got.double() - want.double()).abs()
        bad = ~(diff <= tol * want.double().abs().clamp_min(1.0))
        if got.shape != want.shape or bool(bad.any()):
            worst = float(diff.max()) if got.shape == want.shape else float("nan")
            raise fail(promise, f"a token's vector changed by {worst:.2g} {what} (tolerance {tol:.1g})")

    for i in range(b):
        for j in range(t):
            alone = call("tokens aggregated on their own", f"__call__ on token {j} of text {i} alone", resolved,
                         states[:, i:i + 1, j:j + 1])
            same("tokens aggregated on their own", alone[0, 0], out[i, j],
                 f"(text {i}, token {j}) when aggregated alone")
    other = (3 * torch.randn(states.shape, generator=gen, dtype=torch.float64)).to(dtype)
    other[:, :, :2] = states[:, :, :2]
    got = call("tokens aggregated on their own", "__call__ on other padding", resolved, other)
    same("tokens aggregated on their own", got[:, :2], out[:, :2],
         "when the tokens after it changed (padding)")
    perm_b, perm_t = torch.tensor([2, 0, 1]), torch.tensor([4, 2, 0, 3, 1])
    got = call("tokens aggregated on their own", "__call__ on the texts and tokens reordered", resolved,
               states[:, perm_b][:, :, perm_t])
    same("tokens aggregated on their own", got, out[perm_b][:, perm_t],
         "when the texts and tokens are reordered")

    rebuilt = round_trip(Composition(aggregator=aggregator), AGGREGATORS.stage).aggregator
    rebuilt = call("spec round trip", "resolve() of the rebuilt aggregator", rebuilt.resolve, num_layers, default_layer)
    check_signature(resolved, rebuilt)
    same("spec round trip", call("spec round trip", "the rebuilt aggregator", rebuilt, states), out,
         "by the aggregator built from its run file")

