"""Weighting schemes: uniform, idf from the references (idf-S), idf from a corpus (idf-L), and
the SEP switch that gives candidates an idf of their own."""

from __future__ import annotations

from dataclasses import dataclass, field
import weakref
from typing import TYPE_CHECKING, Sequence

import torch

from ..errors import ConfigError
from ..settings import FLAG, HELP, PARSE, file_or_texts, setting
from ..tokens import TokenTable
from .base import DocumentFrequencies, WeightState, Weighting

if TYPE_CHECKING:
    from ..encoders.base import Encoder


@dataclass(eq=False)
class Corpus:
    """The sentences of an idf-L corpus (blank lines dropped), and a ``name`` for signatures (its
    file). Its document frequencies are counted once per encoder, however many weightings and
    language pairs read it."""

    texts: Sequence[str]
    name: str | None = None
    _counted: weakref.WeakKeyDictionary[Encoder, DocumentFrequencies] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.texts, str):
            raise ConfigError("an idf corpus is a list of sentences, not one string")
        self.texts = tuple(t for t in self.texts if t.strip())
        if not self.texts:
            where = f" {self.name}" if self.name else ""
            raise ConfigError(f"the idf corpus{where} is empty: idf-L needs at least one sentence")

    def __len__(self) -> int:
        return len(self.texts)

    def frequencies(self, encoder: Encoder) -> DocumentFrequencies:
        """The document frequencies of the sentences under ``encoder``'s tokenizer."""
        if encoder not in self._counted:
            table = TokenTable.from_tokenized(encoder.tokenize(self.texts))
            counts = DocumentFrequencies.empty(encoder.vocab_size)
            counts.update(table, torch.ones(len(table), dtype=torch.float64))
            self._counted[encoder] = counts
        return self._counted[encoder]


@dataclass(frozen=True)
class Uniform(Weighting):
    """Every kept token has mass 1 (special tokens follow the filter's policy)."""

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        pass  # nothing to count

    def depends_on_texts(self) -> bool:
        return False

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        ones = torch.ones(len(state.ref.df))
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

    corpus: Corpus | Sequence[str] | None = field(default=None, repr=False, hash=False, compare=False, metadata={
        FLAG: "--idf-corpus", PARSE: file_or_texts, HELP: "The idf-L corpus: a file, one sentence per line."})
    corpus_name: str | None = setting(None, option=False)
    sep: bool = setting(False, help="SEP: candidates get an idf of their own (idf-S, idf-L).")

    def __post_init__(self) -> None:
        if self.corpus is not None and not isinstance(self.corpus, Corpus):
            object.__setattr__(self, "corpus", Corpus(self.corpus, self.corpus_name))
        if self.corpus is not None and self.corpus_name is None:
            object.__setattr__(self, "corpus_name", self.corpus.name)

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        if self.corpus is None:
            state.ref.update(table, ref_counts)
        if self.sep:
            state.cand.update(table, cand_counts)

    def depends_on_texts(self) -> bool:
        return self.corpus is None or self.sep

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        ref = self.corpus.frequencies(encoder).idf() if self.corpus is not None else state.ref.idf()
        return (ref, state.cand.idf()) if self.sep else (ref, ref)

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
