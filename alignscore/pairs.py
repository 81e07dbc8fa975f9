"""The pairs the engine scores, over unique texts: one pair per candidate and reference
(:class:`Pairs`), or all-against-all blocks (:class:`Blocks`). Each text is stored once, so it
is tokenized and encoded once however many pairs it is in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import torch

from .errors import InputError

__all__ = ["Blocks", "Pairs", "merge_pairs", "texts_only", "unique_texts"]


def unique_texts(texts: Sequence[str]) -> tuple[list[str], torch.Tensor]:
    """Unique texts (first-seen order) and, for each input, its index among them. Texts are
    compared after stripping, as the tokenizer sees them.

    Parameters
    ----------
    texts : sequence of str
        The texts, with repeats.

    Returns
    -------
    (list of str, torch.Tensor)
        The unique texts, stripped, and ``[len(texts)]`` int64 indices into them.

    Examples
    --------
    >>> unique_texts(["a cat", " a cat ", "the dog"])
    (['a cat', 'the dog'], tensor([0, 0, 1]))
    """
    index: dict[str, int] = {}
    inverse = [index.setdefault(t.strip(), len(index)) for t in texts]
    return list(index), torch.tensor(inverse, dtype=torch.long)



@dataclass
class Pairs:
    """Pairs of texts to score, over the unique ``texts``.

    Pair k aligns text ``ref[k]`` (the reference) with text ``cand[k]`` (the candidate);
    candidate i's pairs are ``groups[i]:groups[i+1]`` (one per reference). For the weightings,
    text u counts as ``ref_counts[u]`` reference documents (every reference occurrence, as
    bert_score counts idf) and ``cand_counts[u]`` candidate documents (each candidate once).

    Parameters
    ----------
    texts : list of str
        The unique texts.
    ref, cand : torch.Tensor
        ``[P]`` int64: each pair's reference and candidate, as indices into ``texts``.
    ref_counts, cand_counts : torch.Tensor
        ``[U]`` float64: each text's documents as a reference / as a candidate.
    groups : torch.Tensor
        ``[C + 1]`` int64: where each candidate's pairs start, then ``P``.

    Examples
    --------
    Made by :meth:`from_groups` or :meth:`from_pairs` rather than by hand:

    >>> pairs = Pairs.from_pairs(["the dog", "a cat"], ["a dog", "a dog"])
    >>> len(pairs), pairs.texts, pairs.ref.tolist(), pairs.cand.tolist()
    (2, ['the dog', 'a cat', 'a dog'], [0, 1], [2, 2])
    """

    texts: list[str]
    ref: torch.Tensor
    cand: torch.Tensor
    ref_counts: torch.Tensor
    cand_counts: torch.Tensor
    groups: torch.Tensor

    @classmethod
    def from_groups(cls, cands: Sequence[str], refs: Sequence[Sequence[str]]) -> "Pairs":
        """Candidate i against each text of ``refs[i]``.

        Parameters
        ----------
        cands : sequence of str
            The candidates (checked texts).
        refs : sequence of sequences of str
            Each candidate's references.

        Returns
        -------
        Pairs
            One pair per candidate and reference, over the unique texts (first-seen order,
            references first).

        Examples
        --------
        >>> pairs = Pairs.from_groups(["a dog", "a dog"], [["the dog"], ["the dog", "a cat"]])
        >>> pairs.texts, pairs.ref.tolist(), pairs.cand.tolist(), pairs.groups.tolist()
        (['the dog', 'a cat', 'a dog'], [0, 0, 1], [2, 2, 2], [0, 1, 3])
        >>> pairs.ref_counts.tolist(), pairs.cand_counts.tolist()   # documents, for idf
        ([2.0, 1.0, 0.0], [0.0, 0.0, 2.0])
        """
        sizes = torch.tensor([len(g) for g in refs], dtype=torch.long)
        groups = torch.zeros(len(refs) + 1, dtype=torch.long)
        groups[1:] = sizes.cumsum(0)
        flat = [t for g in refs for t in g]
        texts, inverse = unique_texts(flat + list(cands))
        ref_text, cand_text = inverse[:len(flat)], inverse[len(flat):]
        n = len(texts)
        return cls(texts, ref_text, cand_text[torch.repeat_interleave(torch.arange(len(cands)), sizes)],
                   torch.bincount(ref_text, minlength=n).double(), torch.bincount(cand_text, minlength=n).double(),
                   groups)

    @classmethod
    def from_pairs(cls, refs: Sequence[str], cands: Sequence[str]) -> "Pairs":
        """Pair k: ``cands[k]`` against ``refs[k]``."""
        if len(refs) != len(cands):
            raise InputError(f"{len(cands)} candidates but {len(refs)} references")
        return cls.from_groups(cands, [[r] for r in refs])

    def __len__(self) -> int:
        return len(self.ref)

    def on(self, texts: list[str], index: dict[str, int]) -> "Pairs":
        """These pairs over a larger list of unique ``texts`` (``index``: text -> position)."""
        where = torch.tensor([index[t] for t in self.texts], dtype=torch.long)
        counts = [torch.zeros(len(texts), dtype=torch.float64).index_add_(0, where, c)
                  for c in (self.ref_counts, self.cand_counts)]
        return Pairs(texts, where[self.ref], where[self.cand], counts[0], counts[1], self.groups)



def merge_pairs(groups: Sequence[Pairs]) -> list[Pairs]:
    """Several sets of pairs over one list of unique texts (the union, first-seen order): each
    keeps its pairs and counts, so weights fitted on it are its own.

    Parameters
    ----------
    groups : sequence of Pairs
        The sets of pairs.

    Returns
    -------
    list of Pairs
        One per set, in order, all over the same ``texts``.

    Examples
    --------
    >>> first, second = merge_pairs([Pairs.from_pairs(["the cat"], ["a cat"]), Pairs.from_pairs(["a dog"], ["a cat"])])
    >>> second.texts, second.ref.tolist(), second.cand.tolist(), second.ref_counts.tolist()
    (['the cat', 'a cat', 'a dog'], [2], [1], [0.0, 0.0, 1.0])
    """
    index: dict[str, int] = {}
    for g in groups:
        for t in g.texts:
            index.setdefault(t, len(index))
    texts = list(index)
    return [g.on(texts, index) for g in groups]


def texts_only(merged: Sequence[Pairs]) -> Pairs:
    """The texts of ``merged`` (pairs over the same texts) without pairs or counts: what
    :func:`~alignscore.engine.encode` needs to encode them all once."""
    empty = torch.empty(0, dtype=torch.long)
    zeros = torch.zeros(len(merged[0].texts), dtype=torch.float64)
    return Pairs(merged[0].texts, empty, empty, zeros, zeros, torch.zeros(1, dtype=torch.long))


@dataclass
class Blocks:
    """Blocks of all-against-all pairs over unique texts: block b aligns each of its candidates
    ``cands[b] [N_b]`` (indices into ``pairs.texts``) with each of its references ``refs[b]
    [M_b]``. ``pairs`` holds the texts and the weightings' counts (no pair lists): each
    reference counts once per place it has in a block's references, each candidate once per
    place in a block's candidates, so idf-S is fitted over the references of the blocks (not
    over the ``N_b x M_b`` pairs) and SEP's candidate idf over the candidates."""

    pairs: Pairs
    cands: list[torch.Tensor]
    refs: list[torch.Tensor]

    @classmethod
    def of(cls, blocks: Sequence[tuple[Sequence[str], Sequence[str]]]) -> "Blocks":
        """From ``(candidates, references)`` per block (checked lists of strings)."""
        flat = [t for cands, refs in blocks for t in (*refs, *cands)]
        texts, inverse = unique_texts(flat)
        cand_idx, ref_idx, at = [], [], 0
        for cands, refs in blocks:
            ref_idx.append(inverse[at:at + len(refs)])
            cand_idx.append(inverse[at + len(refs):at + len(refs) + len(cands)])
            at += len(refs) + len(cands)
        empty = torch.empty(0, dtype=torch.long)

        def counts(parts: list[torch.Tensor]) -> torch.Tensor:
            return torch.bincount(torch.cat([empty, *parts]), minlength=len(texts)).double()

        n_cands = sum(len(c) for c in cand_idx)
        pairs = Pairs(texts, empty, empty, counts(ref_idx), counts(cand_idx), torch.arange(n_cands + 1))
        return cls(pairs, cand_idx, ref_idx)

    def __len__(self) -> int:
        return len(self.cands)

    def rows(self) -> Iterator[tuple[int, int]]:
        """``(block, candidate)`` in order: one row of pairs each."""
        for b, cands in enumerate(self.cands):
            for i in range(len(cands)):
                yield b, i
