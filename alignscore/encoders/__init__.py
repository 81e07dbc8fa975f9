"""Encoders: texts -> per-token hidden states of the layers asked for."""

from ..registry import Registry
from .base import Encoder, Tokenized
from .huggingface import HFEncoder
from .layers import DEFAULT_LAYERS, DEFAULT_MODEL, PACKAGED_MODEL

ENCODERS: Registry[Encoder] = Registry("encoder")
ENCODERS.register("hf")(HFEncoder)

__all__ = ["ENCODERS", "DEFAULT_LAYERS", "DEFAULT_MODEL", "PACKAGED_MODEL", "Encoder", "HFEncoder", "Tokenized"]
