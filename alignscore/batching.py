"""The engine's batching step: what an aligner sees of one composition (:class:`AlignerInputs`)
and the pairs gathered from it into right-padded :class:`~alignscore.aligners.base.PairBatch`
batches of similar length (:func:`batch_order`, :func:`pair_batch`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

import torch

from .aligners.base import PairBatch
from .encoding import Encoded
from .runtime import Runtime
from .tokens import TokenTable, pad_gather

__all__ = ["AlignerInputs", "batch_order", "padded_blocks", "pair_batch", "pair_batches"]


@dataclass
class AlignerInputs:
    """What an aligner sees for one composition, over the packed tokens of the unique texts.

    Parameters
    ----------
    vectors : torch.Tensor
        ``[N, D]`` the aggregator's unit token vectors.
    ref_mass, cand_mass : torch.Tensor
        ``[N]`` each token's mass when its text is the reference / the candidate.
    matchable : torch.Tensor
        ``[N]`` bool: who may be aligned to.
    carries : torch.Tensor
        ``[N]`` bool, on the CPU: who the token roles let carry mass.
    ref_vectors : torch.Tensor, optional
        ``[N, D]``: the vectors a text has on the reference side where they differ (a source's,
        remapped toward the candidates' language).

    Examples
    --------
    Made by :func:`~alignscore.engine.aligner_inputs` rather than by hand:

    >>> mass, yes = torch.ones(3), torch.ones(3, dtype=torch.bool)
    >>> inputs = AlignerInputs(torch.eye(3), mass, mass, yes, yes)
    >>> inputs.reference_vectors is inputs.vectors   # no remapping: one set of vectors
    True
    """

    vectors: torch.Tensor
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    matchable: torch.Tensor
    carries: torch.Tensor
    ref_vectors: torch.Tensor | None = None

    @property
    def reference_vectors(self) -> torch.Tensor:
        """The vectors of the reference side."""
        return self.vectors if self.ref_vectors is None else self.ref_vectors


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
    >>> index, valid = pad_gather(torch.tensor([0, 3, 5]), torch.tensor([1, 0]))
    >>> padded_blocks(packed, index, valid).squeeze(-1).tolist()
    [[4.0, 5.0, 0.0], [1.0, 2.0, 3.0]]
    """
    rows = torch.index_select(packed, 0, index.reshape(-1)).view(*index.shape, packed.shape[-1])
    return rows.mul_(valid.unsqueeze(-1))


def pair_batch(inputs: AlignerInputs, table: TokenTable, ref: torch.Tensor, cand: torch.Tensor,
               like: PairBatch | None = None) -> PairBatch:
    """The right-padded :class:`~alignscore.aligners.base.PairBatch` of pairs ``(ref[k], cand[k])``.

    Padding gets vector 0, mass 0 and is not matchable. The vectors were checked finite when they
    were encoded (:func:`~alignscore.encoding.encode`), so the batch says so.

    Parameters
    ----------
    inputs : AlignerInputs
        One composition's vectors and masses.
    table : TokenTable
        The unique texts' tokens (``inputs`` is over them).
    ref, cand : torch.Tensor
        ``[B]`` int64 unique-text indices.
    like : PairBatch, optional
        A batch of the same pairs over the same vectors, whose vectors are reused (only masses
        and match targets differ).

    Returns
    -------
    PairBatch
        ``B`` pairs on the vectors' device.

    Examples
    --------
    >>> from alignscore.pairs import Pairs
    >>> from alignscore.testing import WordEncoder
    >>> pairs = Pairs.from_pairs(["the cat sat", "a dog"], ["a cat", "the dog"])
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(pairs.texts))
    >>> n, yes = len(table.ids), torch.ones(len(table.ids), dtype=torch.bool)
    >>> batch = pair_batch(AlignerInputs(torch.eye(n), torch.ones(n), torch.ones(n), yes, yes), table,
    ...                    pairs.ref, pairs.cand)
    >>> batch.ref.shape, batch.ref_mass.tolist()   # [CLS] the cat sat [SEP], [CLS] a dog [SEP] + padding
    (torch.Size([2, 5, 17]), [[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 0.0]])
    """
    device = inputs.vectors.device
    r_idx, r_ok = (t.to(device) for t in pad_gather(table.offsets, ref))
    c_idx, c_ok = (t.to(device) for t in pad_gather(table.offsets, cand))
    masses = dict(ref_mass=inputs.ref_mass[r_idx] * r_ok, cand_mass=inputs.cand_mass[c_idx] * c_ok,
                  ref_match=inputs.matchable[r_idx] & r_ok, cand_match=inputs.matchable[c_idx] & c_ok)
    if like is not None:
        return replace(like, **masses)
    return PairBatch(ref=padded_blocks(inputs.reference_vectors, r_idx, r_ok),
                     cand=padded_blocks(inputs.vectors, c_idx, c_ok), finite=True, **masses)


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
    >>> pairs = Pairs.from_pairs(["a", "the cat sat", "a dog"], ["b", "a cat", "the dog"])
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(pairs.texts))
    >>> batch_order(Encoded(pairs, table, vectors={})).tolist()
    [1, 2, 0]
    """
    lengths, p = encoded.table.lengths, encoded.pairs
    return torch.argsort(lengths[p.ref] + lengths[p.cand], descending=True, stable=True)


def pair_batches(encoded: Encoded, inputs: AlignerInputs, runtime: Runtime = Runtime()
                 ) -> Iterator[tuple[torch.Tensor, PairBatch]]:
    """Every pair in batches of ``runtime.pair_batch_size``, in input order (for inspecting
    alignments: ``alignscore show``).

    Parameters
    ----------
    encoded : Encoded
        The pairs and their texts' tokens.
    inputs : AlignerInputs
        One composition's vectors and masses over ``encoded.table``.
    runtime : Runtime
        Its ``pair_batch_size``.

    Returns
    -------
    iterator of (torch.Tensor, PairBatch)
        Each batch's pair indices and the batch (:func:`pair_batch`).

    Examples
    --------
    >>> from alignscore.pairs import Pairs
    >>> from alignscore.testing import WordEncoder
    >>> pairs = Pairs.from_groups(["a cat", "a dog"], [["the cat"], ["dog", "a dog ran"]])
    >>> table = TokenTable.from_tokenized(WordEncoder().tokenize(pairs.texts))
    >>> n, yes = len(table.ids), torch.ones(len(table.ids), dtype=torch.bool)
    >>> inputs = AlignerInputs(torch.eye(n), torch.ones(n), torch.ones(n), yes, yes)
    >>> [sel.tolist() for sel, _ in pair_batches(Encoded(pairs, table, {}), inputs, Runtime(pair_batch_size=2))]
    [[0, 1], [2]]
    """
    p = encoded.pairs
    for start in range(0, len(p), runtime.pair_batch_size):
        sel = torch.arange(start, min(start + runtime.pair_batch_size, len(p)))
        yield sel, pair_batch(inputs, encoded.table, p.ref[sel], p.cand[sel])
