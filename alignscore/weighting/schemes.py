"""Weighting schemes: uniform, idf from the references (idf-S), idf from a corpus (idf-L), and
the SEP switch that gives candidates an idf of their own."""

from __future__ import annotations

import weakref
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import torch

from ..errors import ConfigError
from ..settings import SettingError, setting, settings_of
from ..signature import content_digest
from ..textio import read_lines
from ..tokens import TokenTable
from .base import DocumentFrequencies, WeightState, Weighting
from .classes import TokenClassWeights

if TYPE_CHECKING:
    from ..encoders.base import Encoder


@dataclass(eq=False)
class Corpus:
    """The sentences of an idf-L corpus (blank lines dropped), and a ``name`` for signatures (its
    file). Its document frequencies are counted once per encoder, however many weightings and
    language pairs read it; :attr:`digest` names its content (the sentences kept, see
    :func:`~alignscore.signature.content_digest`), whatever file or list they came from.

    Parameters
    ----------
    texts : sequence of str
        The sentences (a list, not one string); at least one not blank.
    name : str, optional
        Its name in signatures (:meth:`read` gives the file's name).

    Examples
    --------
    >>> corpus = Corpus(["the cat sat", "", "a dog"], name="news.txt")
    >>> corpus.texts, corpus.digest
    (('the cat sat', 'a dog'), 'f46c1a2e21b9')
    """

    texts: Sequence[str]
    name: str | None = None
    _counted: weakref.WeakKeyDictionary[Encoder, DocumentFrequencies] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False)
    _digest: str | None = field(default=None, init=False, repr=False)

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

    @property
    def digest(self) -> str:
        """The content's digest: 12 hex digits of the SHA-256 of the sentences kept, each
        followed by a newline (a file with ``\\n`` line ends and no blank line: its ``sha256sum``)."""
        if self._digest is None:
            self._digest = content_digest(self.texts)
        return self._digest

    def __getstate__(self) -> dict[str, object]:
        """Without the counts: a copy in another process counts its own (Ray, torch.distributed)."""
        return {k: v for k, v in self.__dict__.items() if k != "_counted"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._counted = weakref.WeakKeyDictionary()

    def frequencies(self, encoder: Encoder) -> DocumentFrequencies:
        """The document frequencies of the sentences under ``encoder``'s tokenizer."""
        if encoder not in self._counted:
            table = TokenTable.from_tokenized(encoder.tokenize(self.texts))
            counts = DocumentFrequencies.empty(encoder.vocab_size)
            counts.update(table, torch.ones(len(table), dtype=torch.float64))
            self._counted[encoder] = counts
        return self._counted[encoder]


@dataclass(frozen=True)
class Uniform(TokenClassWeights, Weighting):
    """Every kept token has mass 1 (special tokens follow the filter's policy).

    Parameters
    ----------
    special_weight, punct_weight, stopword_weight, subword_weight, class_stopwords : optional
        The token-class weights every built-in weighting takes
        (:class:`~alignscore.weighting.classes.TokenClassWeights`); all 1 by default.

    Returns
    -------
    Uniform
        The weighting ``none`` (no settings): ``compute`` gives weight 1 to every token id on
        both sides.

    Examples
    --------
    >>> import torch
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> encoder = WordEncoder()
    >>> table = TokenTable.from_tokenized(encoder.tokenize(["the cat sat", "the dog"]))
    >>> ref, cand = Uniform().token_weights(table, torch.ones(2), torch.ones(2), encoder)
    >>> ref[table.ids].tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        pass  # nothing to count

    def depends_on_texts(self) -> bool:
        return False

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        ones = torch.ones(len(state.ref.df))
        return ones, ones

    def signature(self) -> str:
        return "none" + self._class_text()


@dataclass(frozen=True)
class Norm(Uniform):
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

    def reads_norms(self) -> bool:  # the masses come from the vectors: the ids' weights stay 1
        return True

    def signature(self) -> str:
        return "norm" + self._class_text()


def idf_power(idf: torch.Tensor, power: float | torch.Tensor) -> torch.Tensor:
    """``idf^a`` where ``idf > 0``, 0 elsewhere (a token in every sentence keeps mass 0 for any
    ``a``, 0 included); ``a = 1`` returns ``idf`` itself. Differentiable in a tensor ``a``.

    Examples
    --------
    >>> idf = torch.tensor([0.0, 0.5, 2.0])
    >>> idf_power(idf, 2.0).tolist(), idf_power(idf, 0.0).tolist()
    ([0.0, 0.25, 4.0], [0.0, 1.0, 1.0])
    """
    if not isinstance(power, torch.Tensor) and power == 1:
        return idf
    positive = idf > 0
    safe = torch.where(positive, idf, torch.ones_like(idf))
    return torch.where(positive, safe ** power, torch.zeros_like(idf))


@dataclass(frozen=True)
class _Idf(TokenClassWeights, Weighting):
    """Inverse document frequency, ``idf(w) = log((M + 1) / (df(w) + 1))`` over M sentences,
    for references; with ``sep`` (SEP) candidates are weighted by an idf computed over the
    candidates being scored, otherwise the reference-side idf weighs both sides."""

    sep: bool = setting(False, help="SEP: candidates get an idf of their own (idf-S, idf-L).")
    idf_power: float = setting(1.0, ge=0, le=10, help=(
        "idf-S, idf-L: each token's mass is idf^a (1, the default: idf itself; 0: every token that is not in "
        "every sentence weighs 1; above 1 sharpens the weights)."))

    @abstractmethod
    def _reference_idf(self, state: WeightState, encoder: Encoder) -> torch.Tensor:
        """The idf of the reference side."""

    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        ref = self._reference_idf(state, encoder)
        ref, cand = (ref, state.cand.idf()) if self.sep else (ref, ref)
        return idf_power(ref, self.idf_power), idf_power(cand, self.idf_power)

    def _power_text(self) -> str:
        return "" if self.idf_power == 1 else f"^{self.idf_power!r}"


@dataclass(frozen=True)
class IdfS(_Idf):
    """idf-S: the M sentences are the references being scored, each occurrence counted, as
    bert_score does (BERTScore's ``idf=True``).

    Parameters
    ----------
    sep : bool
        SEP: candidates are weighted by an idf of their own, over the candidates being scored;
        otherwise by the references' idf.

    Returns
    -------
    IdfS
        ``compute`` gives ``(ref [V], cand [V])``, ``idf(w) = log((M + 1) / (df(w) + 1))``.

    Examples
    --------
    Over two references, a token in both ("the", and [CLS] and [SEP]) weighs 0, a token in one
    ``log(3 / 2)``:

    >>> import torch
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> encoder = WordEncoder()
    >>> table = TokenTable.from_tokenized(encoder.tokenize(["the cat sat", "the dog"]))
    >>> ref, cand = IdfS().token_weights(table, torch.ones(2), torch.ones(2), encoder)
    >>> [round(w, 4) for w in ref[table.ids].tolist()]   # [CLS] the cat sat [SEP] [CLS] the dog [SEP]
    [0.0, 0.0, 0.4055, 0.4055, 0.0, 0.0, 0.0, 0.4055, 0.0]
    """

    def __post_init__(self) -> None:
        super().__post_init__()

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
        return "idf-S" + self._power_text() + ("+sep" if self.sep else "") + self._class_text()


@dataclass(frozen=True)
class IdfL(_Idf):
    """idf-L: the M sentences are a larger corpus the user supplies (BERTScore Table 9's
    IDF-L): a file (read here) or the sentences. Blank lines are ignored; a corpus with no text
    left is an error. The signature names the corpus by its file's name and its content's digest,
    ``idf-L(corpus.txt#<12 hex>,M=40)`` (``corpus#...`` for sentences given as a list): two
    corpora of one name and other sentences differ there, as their scores do.

    Parameters
    ----------
    idf_corpus : str or tuple of str or Corpus
        The corpus: a file, one sentence per line, or the sentences.
    sep : bool
        As for :class:`IdfS`.

    Returns
    -------
    IdfL
        ``compute`` gives ``(ref [V], cand [V])``, the idf over the corpus's sentences.

    Examples
    --------
    >>> import torch
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> encoder = WordEncoder()
    >>> table = TokenTable.from_tokenized(encoder.tokenize(["the cat sat", "the dog"]))
    >>> ref, _ = IdfL(idf_corpus=("the cat", "a dog")).token_weights(table, torch.ones(2), torch.ones(2), encoder)
    >>> [round(w, 4) for w in ref[table.ids].tolist()]   # "sat" is not in the corpus: log(3)
    [0.0, 0.4055, 0.4055, 1.0986, 0.0, 0.0, 0.4055, 0.4055, 0.0]
    """

    idf_corpus: str | tuple[str, ...] | Corpus | None = setting(
        None, file=True, aliases=("corpus",), metavar="FILE", help="The idf-L corpus: a file, one sentence per line.")
    _corpus: Corpus | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def corpus_setting(cls) -> str:
        """The name of the setting that gives the corpus (its option and run-file key)."""
        shared = {s.name for s in settings_of(TokenClassWeights)}  # their stop-word file is not the corpus
        return next(s.name for s in settings_of(cls) if s.decl.file and s.name not in shared)

    def __post_init__(self) -> None:
        super().__post_init__()
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
        corpus = self.corpus
        return (f"idf-L({corpus.name or 'corpus'}#{corpus.digest},M={len(corpus)})" + self._power_text()
                + ("+sep" if self.sep else "") + self._class_text())
