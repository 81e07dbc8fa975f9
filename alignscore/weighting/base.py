"""The weighting stage: a mass per token id, one table for references and one for candidates.

A weighting accumulates what it needs from the texts being scored in a :class:`WeightState`
(document frequencies: counts that add up over chunks of texts and over processes) with
:meth:`Weighting.update`, then :meth:`Weighting.compute` turns the state into weights. One pass
over the whole input, chunked (streaming) or split between processes (torch.distributed, with
:meth:`WeightState.sync`), gives the same weights.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..tokens import TokenTable

if TYPE_CHECKING:
    from ..distributed import Shard
    from ..encoders.base import Encoder


def document_frequency(table: TokenTable, counts: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Document frequencies::

        df[w] = sum_i counts[i] * [token id w occurs in text i]

    (a text counts once however often ``w`` occurs in it).

    Parameters
    ----------
    table : TokenTable
        The unique texts, packed.
    counts : torch.Tensor
        ``[U]``: how many sentences each text stands for.
    vocab_size : int
        ``V``; token ids are below it.

    Returns
    -------
    torch.Tensor
        ``[V]`` float64.

    Examples
    --------
    >>> from alignscore.tokens import Tokenized, TokenTable
    >>> ids = [[5, 5, 6], [6, 7]]
    >>> table = TokenTable.from_tokenized(Tokenized(ids, [[False] * len(t) for t in ids],
    ...                                             [[True] * len(t) for t in ids], [["x"] * len(t) for t in ids]))
    >>> document_frequency(table, torch.tensor([1.0, 2.0]), 8).tolist()  # text 2 stands for two sentences
    [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 3.0, 2.0]
    """
    key = table.text_index() * vocab_size + table.ids
    key = torch.unique(key)
    texts, ids = key // vocab_size, key % vocab_size
    return torch.bincount(ids, weights=counts[texts].double(), minlength=vocab_size)


def idf_from_df(df: torch.Tensor, num_docs: float) -> torch.Tensor:
    """Inverse document frequencies over ``M`` sentences::

        idf(w) = log((M + 1) / (df(w) + 1))

    so a token never seen gets ``log(M + 1)``. Never negative: a token in every sentence gets
    exactly 0 (a rounding -1e-16 would be a negative mass).

    Parameters
    ----------
    df : torch.Tensor
        ``[V]`` document frequencies (:func:`document_frequency`).
    num_docs : float
        ``M``.

    Returns
    -------
    torch.Tensor
        ``[V]`` float32.

    Examples
    --------
    >>> idf = idf_from_df(torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64), 3)
    >>> [round(x, 4) for x in idf.tolist()]  # log 4, log 2, 0
    [1.3863, 0.6931, 0.0]
    """
    return torch.log((num_docs + 1.0) / (df + 1.0)).clamp_min(0.0).float()


@dataclass
class DocumentFrequencies:
    """``df[w]`` of ``docs`` documents (float64 counts: exact sums in any order).

    Parameters
    ----------
    df : torch.Tensor
        ``[V]`` float64 document frequencies.
    docs : float
        How many documents were counted.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> counts = DocumentFrequencies.empty(WordEncoder().vocab_size)
    >>> counts.update(TokenTable.from_tokenized(WordEncoder().tokenize(["the cat", "the dog"])), torch.ones(2))
    >>> counts.docs, [round(x, 4) for x in counts.idf()[[1, 25]].tolist()]   # [CLS], "the": in both
    (2.0, [0.0, 0.0])
    """

    df: torch.Tensor
    docs: float = 0.0

    @classmethod
    def empty(cls, vocab_size: int) -> "DocumentFrequencies":
        return cls(torch.zeros(vocab_size, dtype=torch.float64))

    def update(self, table: TokenTable, counts: torch.Tensor) -> None:
        """Count the texts of ``table``, text i as ``counts[i]`` documents."""
        self.df += document_frequency(table, counts, len(self.df))
        self.docs += float(counts.sum())

    def idf(self) -> torch.Tensor:
        return idf_from_df(self.df, self.docs)


@dataclass
class WeightState:
    """What a weighting has counted: document frequencies of the references and of the
    candidates. Sum-reducible: :meth:`merge` and :meth:`sync` add counts.

    Parameters
    ----------
    ref, cand : DocumentFrequencies
        The references' and the candidates' counts.

    Examples
    --------
    >>> state, other = WeightState.empty(8), WeightState.empty(8)
    >>> other.ref.docs = 3.0
    >>> state.merge(other); state.merge(other)   # two chunks' counts add up
    >>> state.ref.docs, state.cand.docs
    (6.0, 0.0)
    """

    ref: DocumentFrequencies
    cand: DocumentFrequencies

    @classmethod
    def empty(cls, vocab_size: int) -> "WeightState":
        return cls(DocumentFrequencies.empty(vocab_size), DocumentFrequencies.empty(vocab_size))

    def merge(self, other: "WeightState") -> None:
        for mine, theirs in ((self.ref, other.ref), (self.cand, other.cand)):
            mine.df += theirs.df
            mine.docs += theirs.docs

    def sync(self, shard: Shard | None) -> None:
        """Sum the counts of every rank of ``shard``'s process group (no-op without one)."""
        if shard is None:
            return
        flat = torch.cat([self.ref.df, self.cand.df, torch.tensor([self.ref.docs, self.cand.docs],
                                                                  dtype=torch.float64)])
        flat = shard.all_sum(flat)
        v = len(self.ref.df)
        self.ref.df, self.cand.df = flat[:v].clone(), flat[v:2 * v].clone()
        self.ref.docs, self.cand.docs = float(flat[-2]), float(flat[-1])


class Weighting(ABC):
    """Produces ``(ref_weights, cand_weights)``, each ``[V]`` over token ids; a token's mass is
    its id's weight (times 0/1 from the token roles, and times its vector's norm for a weighting
    that :meth:`reads_norms`), normalised per sentence by the aligner.

    Parameters
    ----------
    None here: each weighting is a frozen dataclass whose fields are its settings.

    Examples
    --------
    >>> from alignscore import IdfS
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()
    >>> table = TokenTable.from_tokenized(encoder.tokenize(["the cat", "the dog"]))
    >>> ref, cand = IdfS().token_weights(table, torch.ones(2), torch.ones(2), encoder)
    >>> [round(w, 4) for w in ref[table.ids].tolist()]   # "the" is in both texts: idf log(3/3)
    [0.0, 0.0, 0.4055, 0.0, 0.0, 0.0, 0.4055, 0.0]
    """

    def update(self, state: WeightState, table: TokenTable, ref_counts: torch.Tensor,
               cand_counts: torch.Tensor) -> None:
        """Count the unique texts of ``table``: text i is a reference ``ref_counts[i]`` times and a
        candidate ``cand_counts[i]`` times."""
        state.ref.update(table, ref_counts)
        state.cand.update(table, cand_counts)

    def depends_on_texts(self) -> bool:
        """Whether the weights depend on the texts being scored (what :meth:`update` counts): then
        pairs scored in separate calls get other weights than pairs scored together. A weighting
        that counts nothing says ``False``."""
        return True

    def reads_norms(self) -> bool:
        """Whether a token's mass is also scaled by its vector's norm before unit normalisation
        (the length of the aggregator's output, which the engine then scales to 1): the engine
        keeps those norms for this weighting and gives a token the mass
        ``weight[id] * role * norm`` instead of ``weight[id] * role``. The weights stay a table
        over token ids; only the vectors differ per occurrence, so the engine multiplies."""
        return False

    def token_multipliers(self, table: TokenTable) -> torch.Tensor | None:
        """``[N]``: a factor per token occurrence of ``table`` that its mass is multiplied by,
        on both sides (the token-class weights of
        :class:`~alignscore.weighting.classes.TokenClassWeights`), or ``None``: none (the
        default). The weights stay a table over token ids; the engine multiplies."""
        return None

    @abstractmethod
    def compute(self, state: WeightState, encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        """The weights from what ``state`` counted (``encoder`` tokenizes an outside corpus)."""

    @abstractmethod
    def signature(self) -> str:
        """What pins the weights."""

    def token_weights(self, table: TokenTable, ref_counts: torch.Tensor, cand_counts: torch.Tensor,
            encoder: Encoder) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`update` over one table, then :meth:`compute`."""
        state = WeightState.empty(encoder.vocab_size)
        self.update(state, table, ref_counts, cand_counts)
        return self.compute(state, encoder)
