"""All-against-all scoring in bounded memory: every candidate of a block against every
reference of it (:class:`~alignscore.pairs.Blocks`), one encoding for all the blocks, the pairs
aligned in chunks of whole rows (``Scorer.pairwise``, MBR)."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator, Sequence

import torch

from .composition import Composition
from .encoders.base import Encoder
from .engine import AlignerInputs, Encoded, PairScores, align, aligner_inputs, encode, norms_read, text_reasons
from .errors import ConfigError
from .pairs import Blocks
from .runtime import Runtime

__all__ = ["align_chunks", "score_blocks"]


def align_chunks(encoded: Encoded, compositions: Sequence[Composition], inputs: Sequence[AlignerInputs],
                 chunks: Iterable[tuple[torch.Tensor, torch.Tensor]], runtime: Runtime = Runtime()
                 ) -> Iterator[list[dict[str, torch.Tensor]]]:
    """:func:`~alignscore.engine.align` over successive subsets of pairs of the same encoded texts, yielding each
    chunk's outputs as they are done: a chunk is ``(ref, cand)``, unique-text indices into
    ``encoded.pairs.texts``. The aligner inputs are computed once, by the caller; only one chunk's
    pairs and outputs are held at a time."""
    for ref, cand in chunks:
        sub = replace(encoded.pairs, ref=ref, cand=cand)
        yield align(replace(encoded, pairs=sub), compositions, inputs, runtime)


def score_blocks(encoder: Encoder, blocks: Blocks, compositions: Sequence[Composition],
                 runtime: Runtime = Runtime(), max_pairs: int = 1 << 16) -> Iterator[list[PairScores]]:
    """Score every block of ``blocks`` with every composition (resolved for ``encoder``): each
    unique text is encoded once for all the blocks, the weights fitted once (see
    :class:`~alignscore.pairs.Blocks`), and the pairs aligned in chunks of about ``max_pairs`` (whole rows: one
    candidate against all of its block's references; a chunk may span blocks). Yields, block by
    block in order, one :class:`~alignscore.engine.PairScores` per composition whose
    ``metrics`` are ``[N_b, M_b]`` matrices (candidate i against reference j) and ``reasons``
    ``[N_b, M_b, 2]``. At most one
    chunk of pairs and the blocks it touches are held at a time.

    Parameters
    ----------
    encoder : Encoder
        The encoder.
    blocks : Blocks
        The blocks (:meth:`~alignscore.pairs.Blocks.of`).
    compositions : sequence of Composition
        Resolved for ``encoder``.
    runtime : Runtime
        How to run.
    max_pairs : int
        About how many pairs are aligned at a time (``>= 1``).

    Returns
    -------
    iterator of lists of PairScores
        Per block, in order, one per composition.

    Examples
    --------
    >>> from alignscore import Composition
    >>> from alignscore.pairs import Blocks
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()
    >>> blocks = Blocks.of([(["the cat", "a dog"], ["a cat", "the dog", "a bird"])])
    >>> ((scores,),) = score_blocks(encoder, blocks, [Composition().resolve(encoder)])
    >>> tuple(scores.metrics["f1"].shape)   # 2 candidates x 3 references
    (2, 3)
    """
    if max_pairs < 1:
        raise ConfigError(f"max_pairs must be >= 1, not {max_pairs}")
    encoded = encode(encoder, blocks.pairs, [c.aggregator for c in compositions], runtime,
                     norms=norms_read(compositions))
    inputs = aligner_inputs(encoded, compositions, encoder)
    reasons = [text_reasons(encoded.table, s) for s in inputs]
    pending: dict[int, list[dict[str, torch.Tensor]]] = {}

    def scores_of(b: int, like: list[dict[str, torch.Tensor]] | None = None) -> list[dict[str, torch.Tensor]]:
        """Block b's matrices (new ones in the dtype of the outputs ``like``)."""
        if b not in pending:
            shape = (len(blocks.cands[b]), len(blocks.refs[b]))
            pending[b] = [{m: torch.zeros(shape, dtype=like[k][m].dtype if like else torch.float32)
                           for m in c.metrics} for k, c in enumerate(compositions)]
        return pending[b]

    def finish(b: int) -> list[PairScores]:
        cands, refs, metrics = blocks.cands[b], blocks.refs[b], scores_of(b)
        del pending[b]
        return [PairScores(values, torch.stack(torch.broadcast_tensors(why[refs, 0].unsqueeze(0),
                                                                       why[cands, 1].unsqueeze(1)), -1))
                for values, why in zip(metrics, reasons)]

    chunks = list(_row_chunks(blocks, max_pairs))
    pairs = ((torch.cat([blocks.refs[b] for b, _ in chunk]),
              torch.cat([blocks.cands[b][i].repeat(len(blocks.refs[b])) for b, i in chunk])) for chunk in chunks)
    done = 0  # blocks yielded so far
    outputs_ = align_chunks(encoded, compositions, inputs, pairs, replace(runtime, progress=False))
    for chunk, outputs in zip(runtime.bar(chunks, "aligning", unit="chunk"), outputs_):
        at = 0
        for b, i in chunk:
            width = len(blocks.refs[b])
            for values, out in zip(scores_of(b, outputs), outputs):
                for name, v in values.items():
                    v[i] = out[name][at:at + width]
            at += width
        b, i = chunk[-1]  # rows come in order: the blocks before it are complete, and so is it at its last row
        while done < (b + 1 if i == len(blocks.cands[b]) - 1 else b):
            yield finish(done)
            done += 1
    while done < len(blocks):  # blocks without candidates
        yield finish(done)
        done += 1


def _row_chunks(blocks: Blocks, max_pairs: int) -> Iterator[list[tuple[int, int]]]:
    """Consecutive rows ``(block, candidate)`` of ``blocks`` in chunks of at most ``max_pairs``
    pairs (a row longer than that is a chunk of its own)."""
    chunk: list[tuple[int, int]] = []
    size = 0
    for b, i in blocks.rows():
        if chunk and size + len(blocks.refs[b]) > max_pairs:
            yield chunk
            chunk, size = [], 0
        chunk.append((b, i))
        size += len(blocks.refs[b])
    if chunk:
        yield chunk
