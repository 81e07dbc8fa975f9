"""Encoders: texts -> per-token hidden states of the layers asked for."""

from ..registry import Registry
from ..tokens import Tokenized
from .base import Encoder
from .cached import CachedEncoder
from .huggingface import HFEncoder
from .layers import DEFAULT_LAYERS, DEFAULT_MODEL, PACKAGED_MODEL
from .static import StaticEncoder

ENCODERS: Registry[Encoder] = Registry("encoder")
ENCODERS.register("hf")(HFEncoder)
ENCODERS.register("static")(StaticEncoder)

__all__ = ["ENCODERS", "DEFAULT_LAYERS", "DEFAULT_MODEL", "PACKAGED_MODEL", "CachedEncoder", "Encoder", "HFEncoder",
           "StaticEncoder", "Tokenized"]
