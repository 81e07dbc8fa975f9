"""Packed token tables: every token of a list of texts in one flat tensor, plus offsets.

Texts of different lengths are stored back to back (``offsets[i]:offsets[i+1]`` is text i), and
:func:`pad_gather` builds right-padded ``[B, T]`` index batches from them without Python loops
over tokens.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
import torch


@dataclass
class Tokenized:
    """Token ids of a list of texts, special tokens included, one list per text.

    ``special[i][t]`` marks the tokens the tokenizer added ([CLS], [SEP], <s>, </s>, ...);
    ``word_start[i][t]`` marks the first sub-token of each word (False for special tokens), taken
    from the tokenizer's word ids, so it is right for WordPiece, BPE and SentencePiece alike;
    ``truncated`` lists the indices of the texts that were cut to the model's limit. ``surface[i][t]`` is the
    text the token covers that no earlier token covered (from the tokenizer's character
    offsets; "" for special tokens and for a bare SentencePiece "▁"), so it reads the same for
    every tokenizer ("," is "," whether the token string is ",", "Ġ," or "▁,"); empty when the
    encoder cannot tell.
    """

    ids: list[list[int]]
    special: list[list[bool]]
    word_start: list[list[bool]]
    tokens: list[list[str]]
    truncated: list[int] = field(default_factory=list)
    surface: list[list[str]] = field(default_factory=list)


@dataclass
class TokenTable:
    """The tokens of ``U`` texts, packed: ``ids``, ``special`` and ``word_start`` are ``[N]``;
    ``tokens`` and ``surface`` (see :class:`Tokenized`; may be empty) are lists of ``N`` strings."""

    ids: torch.Tensor
    special: torch.Tensor
    word_start: torch.Tensor
    offsets: torch.Tensor
    tokens: list[str]
    surface: list[str] = field(default_factory=list)

    @classmethod
    def from_tokenized(cls, tok: Tokenized) -> "TokenTable":
        lengths = torch.tensor([len(x) for x in tok.ids], dtype=torch.long)
        offsets = torch.zeros(len(tok.ids) + 1, dtype=torch.long)
        offsets[1:] = lengths.cumsum(0)
        n = int(offsets[-1])

        def flat(rows: list[list[Any]], dtype: type) -> torch.Tensor:
            return torch.from_numpy(np.fromiter(itertools.chain.from_iterable(rows), dtype=dtype, count=n))

        return cls(
            ids=flat(tok.ids, np.int64),
            special=flat(tok.special, np.bool_),
            word_start=flat(tok.word_start, np.bool_),
            offsets=offsets,
            tokens=list(itertools.chain.from_iterable(tok.tokens)),
            surface=list(itertools.chain.from_iterable(tok.surface)),
        )

    @property
    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def select(self, texts: torch.Tensor) -> tuple["TokenTable", torch.Tensor]:
        """The table of texts ``texts`` (indices, in that order) and ``rows [N_sub]``: where
        each of its tokens sits in this table's packed token axis."""
        lengths = self.lengths[texts]
        offsets = torch.zeros(len(texts) + 1, dtype=torch.long)
        offsets[1:] = lengths.cumsum(0)
        rows = (torch.repeat_interleave(self.offsets[texts], lengths) + torch.arange(int(offsets[-1]))
                - torch.repeat_interleave(offsets[:-1], lengths))
        at = rows.tolist()
        sub = TokenTable(self.ids[rows], self.special[rows], self.word_start[rows], offsets,
                         [self.tokens[i] for i in at], [self.surface[i] for i in at] if self.surface else [])
        return sub, rows

    def text_index(self) -> torch.Tensor:
        """``[N]``: which text each token belongs to."""
        return torch.repeat_interleave(torch.arange(len(self)), self.lengths)


def pad_gather(offsets: torch.Tensor, texts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Index and validity of a right-padded batch of the given texts.

    Returns ``index [B, T]`` into the packed token axis (0 where padded) and ``valid [B, T]``,
    ``T`` the longest of the texts.
    """
    starts = offsets[texts]
    lengths = offsets[texts + 1] - starts
    width = int(lengths.max()) if len(texts) else 0
    ar = torch.arange(width)
    valid = ar.unsqueeze(0) < lengths.unsqueeze(1)
    index = torch.where(valid, starts.unsqueeze(1) + ar, torch.zeros((), dtype=torch.long))
    return index, valid


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while many small lists are built (tokenizations
    of thousands of texts): its collections would otherwise scan them over and over, which can
    take longer than building them. Nothing built here forms reference cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

