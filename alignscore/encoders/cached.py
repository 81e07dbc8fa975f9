"""An encoder whose tokenizations and hidden states go through a persistent cache.

:class:`CachedEncoder` wraps any encoder that has a fingerprint: :meth:`CachedEncoder.tokenize`
reads stored tokenizations and :meth:`CachedEncoder.forward` stored hidden states (see
:mod:`alignscore.cache`), and asks the wrapped encoder only for what is missing, so a run whose
states are all stored never loads the model's weights, nor its tokenizer (the encoder's layer
count, vocabulary size, pad id and token limit are stored too). Everything else is the wrapped encoder's.
"""

from __future__ import annotations

from typing import MutableMapping, Sequence

import torch

from ..cache import EmbeddingCache, EncoderFacts, facts_cached, forward_cached, tokenize_cached
from ..tokens import Tokenized
from .base import Encoder


class CachedEncoder(Encoder):
    """``inner`` through ``cache``: the same numbers, bit for bit, with fewer forward passes."""

    def __init__(self, inner: Encoder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self._fingerprint: str | None = None
        self._stored_facts: EncoderFacts | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def num_layers(self) -> int:
        return self._facts().num_layers

    @property
    def vocab_size(self) -> int:
        return self._facts().vocab_size

    @property
    def pad_id(self) -> int:
        return self._facts().pad_id

    @property
    def model_max_length(self) -> int:
        return self._facts().model_max_length

    def facts_key(self) -> str | None:
        return self.inner.facts_key()

    def _facts(self) -> EncoderFacts:
        if self._stored_facts is None:
            self._stored_facts = facts_cached(self.cache, self.inner, self.fingerprint())
        return self._stored_facts

    @property
    def device(self) -> torch.device:
        return self.inner.device

    def default_layer(self) -> int | None:
        return self.inner.default_layer()

    def forward_shape(self, length: int) -> tuple[int, int]:
        # within the stored token limit a text is one row of its length: the tokenizer stays unloaded
        return (1, length) if length <= self.model_max_length else self.inner.forward_shape(length)

    def signature(self) -> str:
        return self.inner.signature()

    def fingerprint(self, memo: MutableMapping[str, str] | None = None) -> str:
        if self._fingerprint is None:
            self._fingerprint = self.inner.fingerprint(self.cache.digests if memo is None else memo)
        return self._fingerprint

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        return tokenize_cached(self.cache, self.inner, texts)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layers: Sequence[int]) -> torch.Tensor:
        return forward_cached(self.cache, self.inner, self.fingerprint(), input_ids, attention_mask.bool(), layers)
