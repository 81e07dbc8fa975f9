"""Weighting schemes: uniform, idf from the references (idf-S), idf from a corpus (idf-L), and
the SEP switch that gives candidates an idf of their own."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import torch

from ..errors import ConfigError
from ..settings import SettingError, check_settings, setting
from ..textio import read_lines
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
            raise SettingError("idf_corpus", f"the corpus{where} is empty: idf-L needs at least one sentence")

    @classmethod
    def read(cls, path: str) -> "Corpus":
        """The corpus in a file, one sentence per line, named by the file's name."""
        return cls(read_lines(path), Path(path).name)

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
class _Idf(Weighting):
    """Inverse document frequency, ``idf(w) = log((M + 1) / (df(w) + 1))`` over M sentences,
    for references; with ``sep`` (SEP) candidates are weighted by an idf computed over the
    candidates being scored, otherwise the reference-side idf weighs both sides."""

    sep: bool = setting(False, help="SEP: candidates get an idf of their own (idf-S, idf-L).")

    def _reference_idf(self, state: WeightState, encoder: Encoder) -> torch.Tensor:
        raise NotImplementedError

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        ref = self._reference_idf(state, encoder)
        return (ref, state.cand.idf()) if self.sep else (ref, ref)


@dataclass(frozen=True)
class IdfS(_Idf):
    """idf-S: the M sentences are the references being scored, each occurrence counted, as
    bert_score does (BERTScore's ``idf=True``)."""

    def __post_init__(self) -> None:
        check_settings(self)

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        state.ref.update(table, ref_counts)
        if self.sep:
            state.cand.update(table, cand_counts)

    def depends_on_texts(self) -> bool:
        return True

    def _reference_idf(self, state: WeightState, encoder: Encoder) -> torch.Tensor:
        return state.ref.idf()

    def signature(self) -> str:
        return "idf-S" + ("+sep" if self.sep else "")


@dataclass(frozen=True)
class IdfL(_Idf):
    """idf-L: the M sentences are a larger corpus the user supplies (BERTScore Table 9's
    IDF-L): a file (read here, named in the signature by its name) or the sentences. Blank
    lines are ignored; a corpus with no text left is an error."""

    idf_corpus: str | tuple[str, ...] | Corpus | None = setting(None, file=True, aliases=("corpus",), metavar="FILE", help=(
        "The idf-L corpus: a file, one sentence per line."))
    _corpus: Corpus | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_settings(self)
        corpus = self.idf_corpus
        if corpus is None:
            raise SettingError("idf_corpus", "weighting idf-L needs a corpus (a file, one sentence per line)")
        if isinstance(corpus, str):
            corpus = Corpus.read(corpus)
        elif not isinstance(corpus, Corpus):
            corpus = Corpus(corpus)
        object.__setattr__(self, "_corpus", corpus)

    @property
    def corpus(self) -> Corpus:
        assert self._corpus is not None
        return self._corpus

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        if self.sep:
            state.cand.update(table, cand_counts)

    def depends_on_texts(self) -> bool:
        return self.sep

    def _reference_idf(self, state: WeightState, encoder: Encoder) -> torch.Tensor:
        return self.corpus.frequencies(encoder).idf()

    def signature(self) -> str:
        return f"idf-L({self.corpus.name or 'corpus'},M={len(self.corpus)})" + ("+sep" if self.sep else "")
