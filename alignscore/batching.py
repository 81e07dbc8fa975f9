"""The engine's batching helpers: the pairs in order of length, so that a batch pads little
(:func:`batch_order`), and packed token rows gathered into padded blocks (:func:`padded_blocks`)."""

from __future__ import annotations

import torch

from .encoding import Encoded

__all__ = ["batch_order", "padded_blocks"]


def padded_blocks(packed: torch.Tensor, index: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Packed token rows gathered into one right-padded block per text, padding 0.

    One row gather and one multiplication by the validity mask: the vectors are finite
    (:func:`~alignscore.encoding.check_vectors`), so padding becomes 0 (a masked fill, or a loop
    over texts, took several times longer on the CPU).

    Parameters
    ----------
    packed : torch.Tensor
        ``[N, D]`` rows, the tokens of every text one after another.
    index, valid : torch.Tensor
        ``[B, T]``: :func:`~alignscore.tokens.pad_gather` of the texts, on ``packed``'s device.

    Returns
    -------
    torch.Tensor
        ``[B, T, D]``: row b holds the rows of its text (its tokens), then 0.

    Examples
    --------
    >>> packed = torch.arange(1.0, 6.0).unsqueeze(1)   # two texts of 3 and 2 tokens, D = 1
    >>> from alignscore.tokens import pad_gather
    >>> index, valid = pad_gather(torch.tensor([0, 3, 5]), torch.tensor([1, 0]))
    >>> padded_blocks(packed, index, valid).squeeze(-1).tolist()
    [[4.0, 5.0, 0.0], [1.0, 2.0, 3.0]]
    """
    rows = torch.index_select(packed, 0, index.reshape(-1)).view(*index.shape, packed.shape[-1])
    return rows.mul_(valid.unsqueeze(-1))


def batch_order(encoded: Encoded) -> torch.Tensor:
    """The pairs by total length, longest first: batches of similar length pad little.

    Parameters
    ----------
    encoded : Encoded
        The pairs and their texts' tokens.

    Returns
    -------
    torch.Tensor
        ``[P]`` int64: a permutation of the pairs (pairs of equal length keep their order).

    Examples
    --------
    >>> from alignscore.pairs import Pairs
    >>> from alignscore.testing import WordEncoder
    >>> from alignscore.tokens import TokenTable
    >>> pairs = Pairs.from_pairs(["a", "the cat sat", "a dog"], ["b", "a cat", "the dog"])
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(pairs.texts))
    >>> batch_order(Encoded(pairs, table, vectors={})).tolist()
    [1, 2, 0]
    """
    lengths, p = encoded.table.lengths, encoded.pairs
    return torch.argsort(lengths[p.ref] + lengths[p.cand], descending=True, stable=True)
