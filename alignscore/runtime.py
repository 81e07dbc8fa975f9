"""How a run is executed, apart from what it computes: batching, token budget, device, sharding
and progress. Nothing here changes a score.

:func:`embed` is the encoder loop: texts in batches of similar length (longest first), at most
``batch_size`` texts and, with a token budget, at most that many padded tokens each; with a shard,
this process encodes its share of the batches and receives the others' vectors.
"""

from __future__ import annotations

import sys
from numbers import Integral
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, TypeVar

import torch
from tqdm.auto import tqdm

from .errors import ConfigError, describe
from .tokens import TokenTable, pad_gather

if TYPE_CHECKING:
    from .distributed import Shard
    from .encoders.base import Encoder

T = TypeVar("T")


def _positive_int(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ConfigError(f"{what} must be an integer >= 1, not {describe(value)}")


@dataclass(frozen=True)
class Runtime:
    """How to run.

    Args:
        batch_size: texts per encoder batch.
        token_budget: also at most this many padded tokens per encoder batch (bounds the
            encoder's memory on long texts, whose attention grows with ``B T^2``); ``None``: only
            ``batch_size``.
        pair_batch_size: pairs per alignment batch (64: large padded batches cost more in page
            faults than they save on a CPU).
        progress: progress bars on stderr.
        device: where encoders built for this run place their weights (``"cpu"``, ``"cuda"``,
            ``"cuda:1"``; ``None``: CUDA when available).
        shard: this process's place in a torch.distributed group: the ranks split the encoding
            and the alignment, and every rank receives every result.
    """

    batch_size: int = 64
    token_budget: int | None = None
    pair_batch_size: int = 64
    progress: bool = False
    device: str | None = None
    shard: Shard | None = None

    def __post_init__(self) -> None:
        _positive_int(self.batch_size, "batch_size")
        _positive_int(self.pair_batch_size, "pair_batch_size")
        if self.token_budget is not None:
            _positive_int(self.token_budget, "token_budget")

    def mine(self, count: int) -> range:
        """The items (batches) of ``count`` that this process handles (all without a shard)."""
        return self.shard.mine(count) if self.shard is not None else range(count)

    def bar(self, items: Iterable[T], desc: str, **kwargs: object) -> Iterable[T]:
        """``items`` with a progress bar on stderr when :attr:`progress` is on."""
        return tqdm(items, desc=desc, disable=not self.progress, file=sys.stderr, leave=False, **kwargs)


def plan_batches(lengths: torch.Tensor, batch_size: int, token_budget: int | None = None,
                 shape: Callable[[int], tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """``[start, end)`` bounds of consecutive batches over texts of ``lengths``, sorted longest
    first: at most ``batch_size`` rows each and, with a ``token_budget``, at most that many
    padded tokens (``rows x the widest row``; a single larger text forms a batch of its own).
    ``shape(length) -> (rows, width)`` is what a text costs the encoder
    (:meth:`~alignscore.encoders.base.Encoder.forward_shape`: a text encoded in windows counts
    as its windows); default: one row of its length."""
    if token_budget is None and shape is None:
        return [(s, min(s + batch_size, len(lengths))) for s in range(0, len(lengths), batch_size)]
    costs = [shape(n) if shape is not None else (1, n) for n in lengths.tolist()]
    bounds, start, n = [], 0, len(costs)
    while start < n:
        width, rows, end = max(costs[start][1], 1), costs[start][0], start + 1
        while end < n and rows + costs[end][0] <= batch_size and (
                token_budget is None or (rows + costs[end][0]) * width <= token_budget):
            rows += costs[end][0]
            end += 1
        bounds.append((start, end))
        start = end
    return bounds


def embed(encoder: Encoder, table: TokenTable, layers: Sequence[int],
          aggregate: Callable[[torch.Tensor], torch.Tensor], runtime: Runtime = Runtime(),
          desc: str = "encoding") -> torch.Tensor:
    """Token vectors ``[N, D]`` for every token of ``table``, packed in the same order.

    ``aggregate`` maps the ``[L, B, T, D]`` hidden states of ``layers`` to ``[B, T, D']``. The
    result does not depend on the batching: padding is masked out of attention.
    """
    order = torch.argsort(table.lengths, descending=True, stable=True)
    out: torch.Tensor | None = None
    pad = encoder.pad_id
    bounds = plan_batches(table.lengths[order], runtime.batch_size, runtime.token_budget, encoder.forward_shape)
    filled = []
    for b in runtime.bar(runtime.mine(len(bounds)), desc):
        texts = order[bounds[b][0]:bounds[b][1]]
        index, valid = pad_gather(table.offsets, texts)
        ids = torch.where(valid, table.ids[index], torch.full((), pad, dtype=torch.long))
        vectors = aggregate(encoder.forward(ids, valid.long(), layers))
        if out is None:
            # zeros, not empty: filling the fresh buffer in one pass maps its pages faster than
            # the copies below would one by one
            out = torch.zeros(int(table.offsets[-1]), vectors.shape[-1], dtype=vectors.dtype,
                              device=vectors.device)
        # each text's tokens are one contiguous block of ``out``: copy block by block (a loop
        # over the batch's texts, far cheaper on CPU than a scatter through an index tensor)
        for row, (start, n) in enumerate(zip(table.offsets[texts].tolist(), table.lengths[texts].tolist())):
            out[start:start + n] = vectors[row, :n].to(out.device)
        if runtime.shard is not None:
            filled.append(index[valid])
    if runtime.shard is not None:
        rows = torch.cat(filled) if filled else torch.empty(0, dtype=torch.long)
        mine_out = out[rows.to(out.device)] if out is not None else torch.empty(0, 0)
        return runtime.shard.gather(mine_out, rows, int(table.offsets[-1]))
    if out is None:
        out = torch.empty(0, 0)
    return out
