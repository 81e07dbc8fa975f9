"""The encoder stage: texts -> token ids -> hidden states of the layers asked for.

:class:`Encoder` is everything a caller may use of an encoder; :class:`Tokenized` (in
:mod:`alignscore.tokens`) is what its tokenizer returns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import MutableMapping, Sequence

import torch

from ..errors import ConfigError
from ..tokens import Tokenized


class Encoder(ABC):
    """A contextual encoder. Implementations load their model lazily (never at import).

    ``has_layers`` is False for a static encoder (one vector per token, layer 0 only): layer and
    aggregator choices do not apply to it.

    Parameters
    ----------
    None here: each implementation takes its model and settings (:class:`HFEncoder`,
    :class:`StaticEncoder`, or an :class:`~alignscore.encoders.spec.EncoderSpec` built).

    Examples
    --------
    >>> from alignscore.testing import WordEncoder   # a tiny encoder for tests
    >>> encoder = WordEncoder()
    >>> encoder.has_layers, encoder.num_layers, encoder.tokenize(["the cat"]).tokens
    (True, 3, [['[CLS]', 'the', 'cat', '[SEP]']])
    """

    has_layers: bool = True

    @property
    @abstractmethod
    def name(self) -> str:
        """The model's name as the user gave it (hub id or directory); goes into signatures."""

    @property
    @abstractmethod
    def num_layers(self) -> int:
        """Number of transformer blocks; valid layers are 0 (embeddings) .. num_layers."""

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Upper bound (exclusive) of the token ids the tokenizer produces."""

    @property
    @abstractmethod
    def pad_id(self) -> int:
        """The id that pads a batch (masked out by the attention mask)."""

    @property
    @abstractmethod
    def model_max_length(self) -> int:
        """The longest input in tokens, special tokens included; longer texts are truncated, or
        encoded in windows by an encoder that does so (see :meth:`forward_shape`)."""

    @abstractmethod
    def default_layer(self) -> int | None:
        """The layer BERTScore uses for this model when the user names none (``None``: unknown)."""

    def default_layer_origin(self) -> str | None:
        """The model whose default layer :meth:`default_layer` gives when the encoder's own name
        does not say it (a local copy of a known model); None otherwise."""
        return None

    @abstractmethod
    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """Tokenize texts (stripped; truncated to the model's limit, counting how many were, unless
        the encoder encodes long texts in windows)."""

    @abstractmethod
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                layers: Sequence[int]) -> torch.Tensor:
        """Hidden states ``[len(layers), B, T, D]`` of a right-padded batch, float32, on CPU or
        the encoder's device. Layer k is the output of the k-th block (0: embeddings)."""

    def forward_shape(self, length: int) -> tuple[int, int]:
        """``(rows, width)``: what a text of ``length`` tokens costs :meth:`forward`, in rows of
        that many tokens (the runtime's token budget counts ``rows x width``): one row of its
        length, unless the encoder splits texts longer than :attr:`model_max_length` into windows."""
        return 1, length

    @property
    @abstractmethod
    def device(self) -> torch.device:
        """Where :meth:`forward` runs."""

    def check(self) -> None:
        """Check the encoder's settings against its model's tokenizer and configuration, before
        anything is encoded (no weights loaded). Raises ConfigError."""

    @abstractmethod
    def signature(self) -> str:
        """What pins this encoder's numbers (name, revision)."""

    def fingerprint(self, memo: MutableMapping[str, str] | None = None) -> str:
        """A digest that changes whenever :meth:`forward`'s numbers could (the model's weights,
        config and tokenizer, the backend, the dtype): the embedding cache's key. ``memo`` may
        remember file digests between runs. An encoder without one cannot be cached."""
        raise ConfigError(f"{type(self).__name__} has no fingerprint, so its states cannot be cached")
