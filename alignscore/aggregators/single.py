"""One layer's hidden states (BERTScore)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..settings import SettingError, check_settings, setting
from .base import Aggregator, Vectors, resolve_layers


@dataclass(frozen=True)
class SingleLayer(Aggregator):
    """``h_t = H^{(k)}_t``: the token vectors of layer ``k`` (0 = embeddings).

    Parameters
    ----------
    layer : int, optional
        The layer; ``None`` takes the model's default layer (BERTScore Appendix B) when the
        composition is resolved for a model; a negative layer counts from the top (-1: the last
        block).

    Returns
    -------
    SingleLayer
        Resolved for a model (:meth:`resolve`), called on hidden states ``[1, B, T, D]``:
        ``[B, T, D]``.

    Examples
    --------
    >>> SingleLayer().resolve(12, 9).layers_read()   # a 12-block model whose default layer is 9
    (9,)
    >>> SingleLayer(layer=-1).resolve(12, 9).layers_read()
    (12,)
    """

    layer: int | None = setting(None, short="-l", unset="the model's tuned layer (BERTScore's table)",
                                bert_score=("num_layers",), help=(
        "Layer for the single-layer aggregator (0 = embeddings; negative counts from the top). Default: the "
        "model's tuned layer."))

    def __post_init__(self) -> None:
        check_settings(self)

    def resolve(self, num_layers: int, default_layer: int | None = None) -> "SingleLayer":
        k = self.layer if self.layer is not None else default_layer
        if k is None:
            raise SettingError("layer", f"none given and the model has no default layer; give one (0..{num_layers})")
        return replace(self, layer=resolve_layers((k,), num_layers, "layer")[0])

    def layers_read(self) -> tuple[int, ...]:
        if self.layer is None:
            raise SettingError("layer", "the model's default layer: resolve the aggregator against a model first")
        return self._resolved((self.layer,))

    def output(self) -> Vectors:
        return Vectors("layer", 1)

    @property
    def takes_default(self) -> bool:
        return self.layer is None

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        return states[0]

    def signature(self) -> str:
        return f"L{self.layers_read()[0]}"
