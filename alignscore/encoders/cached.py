"""An encoder whose hidden states go through a persistent cache.

:class:`CachedEncoder` wraps any encoder that has a fingerprint: :meth:`CachedEncoder.forward`
reads stored hidden states (see :mod:`alignscore.cache`) and asks the wrapped encoder only for
the texts that are missing, so a run whose states are all stored never loads the model's
weights. Everything else (tokenization included) is the wrapped encoder's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, MutableMapping, Sequence

import torch

from ..cache import DIGESTS, EmbeddingCache, forward_cached
from ..tokens import Tokenized
from .fingerprint import digest_memo
from .base import Encoder
from .huggingface import HFEncoder


class _Wrapped:
    """An attribute read through from the wrapped encoder's attribute of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: "CachedEncoder | None", owner: type | None = None) -> Any:
        return self if obj is None else getattr(obj.inner, self.name)


class CachedEncoder(Encoder):
    """``inner`` through ``cache``: the same numbers (stored states are copies of computed ones),
    with fewer forward passes.

    Parameters
    ----------
    inner : Encoder
        The encoder; it needs a :meth:`~alignscore.encoders.base.Encoder.fingerprint` (the
        cache's key) to encode anything.
    cache : EmbeddingCache
        Where the states are stored (:meth:`~alignscore.cache.CacheSpec.build`).

    Examples
    --------
    Everything but :meth:`forward` is the wrapped encoder's:

    >>> import tempfile
    >>> from alignscore.cache import CacheSpec
    >>> from alignscore.testing import WordEncoder
    >>> cached = CachedEncoder(WordEncoder(), CacheSpec(tempfile.mkdtemp()).build())
    >>> cached.name, cached.tokenize(["the cat"]).tokens
    ('words', [['[CLS]', 'the', 'cat', '[SEP]']])
    """

    def __init__(self, inner: Encoder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self._fingerprint: str | None = None

    # one descriptor each: each reads the wrapped encoder's attribute of its own name
    name, num_layers, vocab_size, pad_id, model_max_length, device, has_layers = (_Wrapped() for _ in range(7))

    def default_layer(self) -> int | None:
        return self.inner.default_layer()

    def default_layer_origin(self) -> str | None:
        return self.inner.default_layer_origin()

    def forward_shape(self, length: int) -> tuple[int, int]:
        return self.inner.forward_shape(length)

    def check(self) -> None:
        self.inner.check()

    def signature(self) -> str:
        if isinstance(self.inner, HFEncoder) and Path(self.inner.model).is_dir():
            self.fingerprint()  # a local model's digest from the cache's memo: a re-run hashes nothing
        return self.inner.signature()

    def fingerprint(self, memo: MutableMapping[str, str] | None = None) -> str:
        """The wrapped encoder's, with file digests remembered in the cache's folder."""
        if self._fingerprint is None:
            if memo is not None:
                self._fingerprint = self.inner.fingerprint(memo)
            else:
                with digest_memo(self.cache.directory / DIGESTS) as stored:
                    self._fingerprint = self.inner.fingerprint(stored)
        return self._fingerprint

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        return self.inner.tokenize(texts)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layers: Sequence[int]) -> torch.Tensor:
        return forward_cached(self.cache, self.inner, self.fingerprint(), input_ids, attention_mask.bool(), layers)
