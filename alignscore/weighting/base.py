"""The weighting stage: a mass per token id, one table for references and one for candidates."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from ..encoders.base import Tokenized
from ..tokens import TokenTable


@dataclass
class WeightContext:
    """What a weighting may look at: the unique texts being scored and how often each occurs
    as a reference and as a candidate, and the tokenizer (for an outside corpus)."""

    table: TokenTable
    ref_counts: torch.Tensor
    cand_counts: torch.Tensor
    vocab_size: int
    tokenize: Callable[[Sequence[str]], Tokenized]


class Weighting(ABC):
    """Produces ``(ref_weights, cand_weights)``, each ``[V]`` over token ids; a token's mass is
    its id's weight (times 0/1 from the token filter), normalised per sentence by the aligner."""

    @abstractmethod
    def fit(self, ctx: WeightContext) -> tuple[torch.Tensor, torch.Tensor]:
        ...

    @abstractmethod
    def signature(self) -> str:
        ...


def document_frequency(table: TokenTable, counts: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``df[w]``: in how many sentences token id ``w`` occurs, each unique text of ``table``
    counted ``counts[i]`` times. Returns ``[V]`` float64."""
    key = table.text_index() * vocab_size + table.ids
    key = torch.unique(key)
    texts, ids = key // vocab_size, key % vocab_size
    return torch.bincount(ids, weights=counts[texts].double(), minlength=vocab_size)


def idf_from_df(df: torch.Tensor, num_docs: float) -> torch.Tensor:
    """``idf(w) = log((M + 1) / (df(w) + 1))``; a token never seen gets ``log(M + 1)``. Never
    negative: a token in every sentence gets exactly 0 (a rounding -1e-16 would be a negative mass)."""
    return torch.log((num_docs + 1.0) / (df + 1.0)).clamp_min(0.0).float()
