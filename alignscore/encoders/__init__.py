"""Encoders: texts -> per-token hidden states of the layers asked for."""

from ..tokens import Tokenized
from .base import Encoder
from .cached import CachedEncoder
from .huggingface import HFEncoder
from .layers import DEFAULT_LAYERS, DEFAULT_MODEL, PACKAGED_MODEL
from .static import StaticEncoder

__all__ = ["DEFAULT_LAYERS", "DEFAULT_MODEL", "PACKAGED_MODEL", "CachedEncoder", "Encoder", "HFEncoder",
           "StaticEncoder", "Tokenized"]
