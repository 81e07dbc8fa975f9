"""Encoders: texts -> per-token hidden states of the layers asked for; :func:`encoder_of` makes the
one an :class:`~alignscore.encoders.spec.EncoderSpec` names."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..settings import keyword
from ..tokens import Tokenized
from .base import Encoder
from .cached import CachedEncoder
from .huggingface import HFEncoder
from .layers import DEFAULT_LAYERS, DEFAULT_MODEL, PACKAGED_MODEL
from .spec import VECTOR_SUFFIXES, EncoderSpec, local_model
from .static import StaticEncoder


def encoder_of(e: EncoderSpec, device: str | None = None, name: Callable[[str], str] = keyword) -> Encoder:
    """The encoder an :class:`EncoderSpec` names (nothing loaded yet).

    Parameters
    ----------
    e : the encoder's description.
    device : where it runs (``None``: as the runtime decides).
    name : how its warnings name the run's options (:meth:`~alignscore.runtime.Runtime.name`).

    Returns
    -------
    Encoder
        A :class:`~alignscore.encoders.static.StaticEncoder` where the model is a static table (a
        word2vec text file, a model2vec directory), else an :class:`HFEncoder`.

    Examples
    --------
    >>> encoder_of(EncoderSpec("all-MiniLM-L6-v2"), "cpu")
    HFEncoder(model='all-MiniLM-L6-v2', device_name='cpu', ...)
    """
    if e.static is not None:
        return StaticEncoder(e.model, lowercase=e.lowercase, device_name=device)
    if Path(e.model).suffix in VECTOR_SUFFIXES:  # meant as a vectors file, and none is there: never a hub id
        local_model(e.model)  # refused, naming the setting
    return HFEncoder(e.model, device_name=device, max_length=e.max_length, revision=e.revision,
                     dtype=e.dtype, long_texts=e.long_texts, stride=e.window_stride, naming=name)


__all__ = ["DEFAULT_LAYERS", "DEFAULT_MODEL", "PACKAGED_MODEL", "CachedEncoder", "Encoder", "HFEncoder",
           "StaticEncoder", "Tokenized", "encoder_of"]
