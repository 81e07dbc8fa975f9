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
class Norm(Weighting):
    """Word Rotator's Distance's masses (Yokoi et al., 2020): a token's mass is the norm of its
    vector before the engine scales it to unit length::

        m_t = ||h_t||      (times 0 where the token roles give no mass)

    normalised per text by the aligner, ``a_t = m_t / sum_s m_s``. With the exact transport
    aligner on the cosine cost (``wmd`` with ``cost="cos"``, ``C = 1 - cos``) this is WRD: the
    norm says how much a word weighs, the direction what it means. ``h_t`` is what the
    aggregator outputs, so "the norm" is, by aggregator:

    - a single layer: the hidden state's norm at that layer (a static table: the word vector's
      norm, as in the paper's word2vec and GloVe experiments);
    - ``pmeans``: the norm of the concatenation ``[M_p1; ...; M_pn]``; with ``normalize=True``
      the power means are over unit-normalised layers, so the norm says how the layers'
      directions combine (the mean's part is longer as they agree), not how long the hidden
      states are; with ``normalize=False`` it grows with them;
    - ``routing``: the norm of the routed vector; with ``normalize=True`` a convex combination
      of unit vectors, at most 1, larger as the layers agree;
    - ``stack``: ``sqrt(L)`` for every token (each layer is unit-normalised first), so the
      masses are uniform: ``norm`` equals ``none`` there (up to all-zero vectors).

    The masses depend on each token's own vector only, never on the other texts
    (:meth:`depends_on_texts` is False: nothing is counted, and a streamed or chunked run gets
    the same masses). The weights over token ids are 1; the engine multiplies in the norms
    (:meth:`~alignscore.weighting.base.Weighting.reads_norms`).

    Parameters
    ----------
    None; the masses come from the vectors.

    Returns
    -------
    Norm
        The weighting; ``compute`` gives weights of 1 for every token id, which the engine
        multiplies by each token's norm.

    Examples
    --------
    A word-vector table where "cat" is three times as long as "dog", and orthogonal to it: aligned
    with "cat" alone, "cat dog" moves a quarter of its mass (dog's) at cost ``1 - cos = 1``, so
    WRD is 0.25 and the score ``1 - WRD`` 0.75; uniform masses move half of it:

    >>> import pathlib, tempfile
    >>> import alignscore
    >>> table = pathlib.Path(tempfile.mkdtemp()) / "words.vec"
    >>> _ = table.write_text("cat 3.0 0.0\\ndog 0.0 1.0\\n")
    >>> wrd = dict(model=str(table), weighting="norm", aligner="wmd", cost="cos")
    >>> alignscore.score(["cat"], ["cat dog"], **wrd)["score"].tolist()
    [0.75]
    >>> alignscore.score(["cat"], ["cat dog"], **{**wrd, "weighting": "none"})["score"].tolist()
    [0.5]
    """

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        pass  # nothing to count: the masses come from the vectors

    def depends_on_texts(self) -> bool:
        return False

    def reads_norms(self) -> bool:
        return True

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        ones = torch.ones(len(state.ref.df))
        return ones, ones

    def signature(self) -> str:
        return "norm"


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
