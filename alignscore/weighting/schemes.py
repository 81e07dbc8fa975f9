"""Weighting schemes: uniform, idf from the references (idf-S), idf from a corpus (idf-L), and
the SEP switch that gives candidates an idf of their own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from ..errors import ConfigError
from ..tokens import TokenTable
from .base import WeightContext, Weighting, document_frequency, idf_from_df


@dataclass(frozen=True)
class Uniform(Weighting):
    """Every kept token has mass 1 (special tokens follow the filter's policy)."""

    sep: bool = False

    def __post_init__(self) -> None:
        if self.sep:
            raise ConfigError("SEP (separate candidate idf) needs an idf weighting (idf-S or idf-L)")

    def fit(self, ctx: WeightContext) -> tuple[torch.Tensor, torch.Tensor]:
        ones = torch.ones(ctx.vocab_size)
        return ones, ones

    def signature(self) -> str:
        return "none"


@dataclass(frozen=True)
class Idf(Weighting):
    """Inverse document frequency, ``idf(w) = log((M + 1) / (df(w) + 1))`` over M sentences.

    Args:
        corpus: ``None`` for idf-S (the M sentences are the references being scored, each
            occurrence counted, as bert_score does), or the sentences of a larger corpus (idf-L).
            Blank corpus lines are ignored; a corpus with no text left is an error.
        corpus_name: how the corpus is named in the signature (e.g. its file name).
        sep: SEP: candidates are weighted by an idf computed over the candidates being scored;
            otherwise the reference-side idf weighs both sides.
    """

    corpus: Sequence[str] | None = field(default=None, repr=False, hash=False, compare=False)
    corpus_name: str | None = None
    sep: bool = False

    def __post_init__(self) -> None:
        if self.corpus is not None:
            texts = tuple(t for t in self.corpus if t.strip())
            if not texts:
                where = f" {self.corpus_name}" if self.corpus_name else ""
                raise ConfigError(f"the idf corpus{where} is empty: idf-L needs at least one sentence")
            object.__setattr__(self, "corpus", texts)

    def _corpus_idf(self, ctx: WeightContext) -> torch.Tensor:
        tok = ctx.tokenize(self.corpus)
        table = TokenTable.from_tokenized(tok)
        counts = torch.ones(len(table), dtype=torch.float64)
        return idf_from_df(document_frequency(table, counts, ctx.vocab_size), len(table))

    def fit(self, ctx: WeightContext) -> tuple[torch.Tensor, torch.Tensor]:
        if self.corpus is None:
            num = float(ctx.ref_counts.sum())
            ref = idf_from_df(document_frequency(ctx.table, ctx.ref_counts, ctx.vocab_size), num)
        else:
            ref = self._corpus_idf(ctx)
        if not self.sep:
            return ref, ref
        num = float(ctx.cand_counts.sum())
        cand = idf_from_df(document_frequency(ctx.table, ctx.cand_counts, ctx.vocab_size), num)
        return ref, cand

    def signature(self) -> str:
        if self.corpus is None:
            base = "idf-S"
        else:
            base = f"idf-L({self.corpus_name or 'corpus'},M={len(self.corpus)})"
        return base + ("+sep" if self.sep else "")


def idf_s(sep: bool = False) -> Idf:
    """idf over the references being scored (BERTScore's ``idf=True``)."""
    return Idf(sep=sep)


def idf_l(corpus: Sequence[str] | None = None, corpus_name: str | None = None, sep: bool = False) -> Idf:
    """idf over a corpus the user supplies (BERTScore Table 9's IDF-L)."""
    if corpus is None:
        raise ConfigError("weighting idf-L needs a corpus (--idf-corpus FILE)")
    return Idf(corpus=corpus, corpus_name=corpus_name, sep=sep)
