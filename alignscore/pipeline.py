"""The pipeline's steps as plain functions over packed tokens and padded batches.

``Scorer`` strings them together; the baseline computation and the ablation grid reuse them
with other compositions, so each step takes arrays and returns arrays.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, Sequence

import torch
from tqdm.auto import tqdm

from .aligners.base import Aligner, PairBatch
from .encoders.base import Encoder
from .tokens import TokenTable, pad_gather

if TYPE_CHECKING:
    from .cache import EmbeddingCache
    from .distributed import Shard


def unique_texts(texts: Sequence[str]) -> tuple[list[str], torch.Tensor]:
    """Unique texts (first-seen order) and, for each input, its index among them. Texts are
    compared after stripping, as the tokenizer sees them."""
    index: dict[str, int] = {}
    inverse = [index.setdefault(t.strip(), len(index)) for t in texts]
    return list(index), torch.tensor(inverse, dtype=torch.long)


def embed(encoder: Encoder, table: TokenTable, layers: Sequence[int],
          aggregate: Callable[[torch.Tensor], torch.Tensor], batch_size: int = 64,
          progress: bool = False, desc: str = "encoding", cache: EmbeddingCache | None = None,
          shard: Shard | None = None, token_budget: int | None = None) -> torch.Tensor:
    """Token vectors ``[N, D]`` for every token of ``table``, packed in the same order.

    Texts are encoded in batches of ``batch_size``, longest first (so a batch pads little),
    and, with a ``token_budget``, of at most that many padded tokens (see :func:`plan_batches`);
    ``aggregate`` maps the ``[L, B, T, D]`` hidden states of ``layers`` to ``[B, T, D']``. The
    result does not depend on the batching: padding is masked out of attention.
    With a ``cache``, texts whose states are stored skip the encoder and new states are stored
    (see :mod:`alignscore.cache`). With a ``shard``, this rank encodes its share of the batches
    and receives the other ranks' vectors (see :mod:`alignscore.distributed`).
    """
    order = torch.argsort(table.lengths, descending=True, stable=True)
    out: torch.Tensor | None = None
    pad = encoder.pad_id
    bounds = plan_batches(table.lengths[order], batch_size, token_budget)
    mine = shard.mine(len(bounds)) if shard is not None else range(len(bounds))
    fingerprint = encoder.fingerprint(cache.digests) if cache is not None else ""
    filled = []
    for b in tqdm(mine, desc=desc, disable=not progress, file=sys.stderr, leave=False):
        texts = order[bounds[b][0]:bounds[b][1]]
        index, valid = pad_gather(table.offsets, texts)
        ids = torch.where(valid, table.ids[index], torch.full((), pad, dtype=torch.long))
        if cache is None:
            states = encoder.forward(ids, valid.long(), layers)
        else:
            from .cache import forward_cached

            states = forward_cached(cache, encoder, fingerprint, ids, valid, layers)
        vectors = aggregate(states)
        if out is None:
            # zeros, not empty: filling the fresh buffer in one pass maps its pages faster than
            # the copies below would one by one (measured: 0.3 s vs 0.6 s for 1.2 GB on CPU)
            out = torch.zeros(int(table.offsets[-1]), vectors.shape[-1], dtype=vectors.dtype,
                              device=vectors.device)
        # each text's tokens are one contiguous block of ``out``: copy block by block (a loop
        # over the batch's texts, far cheaper on CPU than a scatter through an index tensor)
        for row, (start, n) in enumerate(zip(table.offsets[texts].tolist(), table.lengths[texts].tolist())):
            out[start:start + n] = vectors[row, :n].to(out.device)
        if shard is not None:
            filled.append(index[valid])
    if shard is not None:
        rows = torch.cat(filled) if filled else torch.empty(0, dtype=torch.long)
        mine_out = out[rows.to(out.device)] if out is not None else torch.empty(0, 0)
        return shard.gather(mine_out, rows, int(table.offsets[-1]))
    if out is None:
        out = torch.empty(0, 0)
    return out


def plan_batches(lengths: torch.Tensor, batch_size: int, token_budget: int | None = None
                 ) -> list[tuple[int, int]]:
    """``[start, end)`` bounds of consecutive batches over texts of ``lengths``, sorted longest
    first: at most ``batch_size`` texts each and, with a ``token_budget``, at most that many
    padded tokens (``texts x longest length``; a single longer text forms a batch of its own).
    The budget bounds the encoder's activations (attention grows with ``B T^2``) for long texts."""
    if token_budget is None:
        return [(s, min(s + batch_size, len(lengths))) for s in range(0, len(lengths), batch_size)]
    bounds, start, n = [], 0, len(lengths)
    longest = lengths.tolist()
    while start < n:
        size = max(1, min(batch_size, token_budget // max(longest[start], 1), n - start))
        bounds.append((start, start + size))
        start += size
    return bounds


def unit(vectors: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``v / max(||v||, 1e-12)`` along the last axis (a zero vector stays zero), written to
    ``out`` when given (``vectors`` itself, or a slice of a larger tensor: no second copy)."""
    norm = vectors.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return torch.div(vectors, norm, out=out)


def padded_blocks(packed: torch.Tensor, table: TokenTable, texts: torch.Tensor, width: int) -> torch.Tensor:
    """``[B, width, D]``: row b holds the packed rows of text ``texts[b]`` (its tokens), then 0.
    Each text is one contiguous block of ``packed``, copied as such (a loop over texts, far
    cheaper on CPU than gathering every token through an index tensor)."""
    out = packed.new_zeros(len(texts), width, packed.shape[-1])
    for row, (start, n) in enumerate(zip(table.offsets[texts].tolist(), table.lengths[texts].tolist())):
        out[row, :n] = packed[start:start + n]
    return out


def pair_batch(vectors: torch.Tensor, table: TokenTable, ref_mass: torch.Tensor, cand_mass: torch.Tensor,
               matchable: torch.Tensor, pair_ref: torch.Tensor, pair_cand: torch.Tensor) -> PairBatch:
    """The right-padded :class:`PairBatch` of pairs ``(pair_ref[k], pair_cand[k])`` (unique-text
    indices), gathered from the packed ``vectors [N, D]``, masses and ``matchable [N]``; padding
    gets vector 0, mass 0 and is not matchable."""
    device = vectors.device
    r_idx, r_ok = pad_gather(table.offsets, pair_ref)
    c_idx, c_ok = pad_gather(table.offsets, pair_cand)
    r_idx, r_ok, c_idx, c_ok = (t.to(device) for t in (r_idx, r_ok, c_idx, c_ok))
    return PairBatch(
        ref=padded_blocks(vectors, table, pair_ref, r_idx.shape[1]),
        cand=padded_blocks(vectors, table, pair_cand, c_idx.shape[1]),
        ref_mass=ref_mass[r_idx] * r_ok,
        cand_mass=cand_mass[c_idx] * c_ok,
        ref_match=matchable[r_idx] & r_ok,
        cand_match=matchable[c_idx] & c_ok,
    )


def align_pairs(aligner: Aligner, vectors: torch.Tensor, table: TokenTable, ref_mass: torch.Tensor,
                cand_mass: torch.Tensor, matchable: torch.Tensor, pair_ref: torch.Tensor,
                pair_cand: torch.Tensor, batch_size: int = 256, progress: bool = False,
                shard: Shard | None = None) -> dict[str, torch.Tensor]:
    """Score pairs ``(pair_ref[k], pair_cand[k])`` of unique-text indices.

    ``vectors [N, D]`` are the packed unit token vectors; ``ref_mass`` / ``cand_mass [N]`` each
    token's mass when its text is the reference / candidate; ``matchable [N]`` who may be
    aligned to. Pairs are processed in batches of similar length; every output is ``[P]`` in
    the order of the pairs. With a ``shard``, this rank aligns its share of the batches and
    every rank receives all the scores.
    """
    lengths = table.lengths
    order = torch.argsort(lengths[pair_ref] + lengths[pair_cand], descending=True, stable=True)
    results: dict[str, torch.Tensor] = {}
    starts = range(0, len(order), batch_size)
    mine = shard.mine(len(starts)) if shard is not None else range(len(starts))
    done = []
    for b in tqdm(mine, desc="aligning", disable=not progress, file=sys.stderr, leave=False):
        sel = order[starts[b]:starts[b] + batch_size]
        batch = pair_batch(vectors, table, ref_mass, cand_mass, matchable, pair_ref[sel], pair_cand[sel])
        for name, value in aligner(batch).items():
            if name not in results:
                results[name] = torch.empty(len(order), dtype=value.dtype)
            results[name][sel] = value.detach().cpu()
        done.append(sel)
    if shard is not None:
        rows = torch.cat(done) if done else torch.empty(0, dtype=torch.long)
        results = {name: shard.gather(results[name][rows] if name in results else torch.empty(0),
                                      rows, len(order)) for name in aligner.metrics}
    return results


def empty_pairs(table: TokenTable, ref_mass: torch.Tensor, cand_mass: torch.Tensor,
                pair_ref: torch.Tensor, pair_cand: torch.Tensor) -> torch.Tensor:
    """``[P]`` bool: pairs where either side carries no mass (empty or wholly filtered text)."""
    text = table.text_index().to(ref_mass.device)
    n = len(table)
    ref_total = torch.zeros(n, dtype=ref_mass.dtype, device=ref_mass.device).index_add_(0, text, ref_mass)
    cand_total = torch.zeros(n, dtype=cand_mass.dtype, device=cand_mass.device).index_add_(0, text, cand_mass)
    return ((ref_total[pair_ref.to(text.device)] <= 0) | (cand_total[pair_cand.to(text.device)] <= 0)).cpu()


def reduce_groups(values: dict[str, torch.Tensor], group_offsets: torch.Tensor, primary: str,
                  how: str) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Reduce per-reference scores to per-candidate scores.

    ``group_offsets [N+1]``: candidate i's pairs are ``group_offsets[i]:group_offsets[i+1]``.
    ``how = "max"`` takes each metric's maximum independently (bert_score); ``"mean"`` the
    average (MoverScore's examples). Also returns the index, within its group, of the reference
    with the best ``primary`` score.
    """
    sizes = group_offsets[1:] - group_offsets[:-1]
    width = int(sizes.max()) if len(sizes) else 0
    ar = torch.arange(width)
    valid = ar.unsqueeze(0) < sizes.unsqueeze(1)
    index = torch.where(valid, group_offsets[:-1].unsqueeze(1) + ar, torch.zeros((), dtype=torch.long))
    out = {}
    for name, v in values.items():
        grid = v[index]
        if how == "max":
            out[name] = grid.masked_fill(~valid, float("-inf")).amax(dim=1)
        else:
            out[name] = (grid * valid).sum(dim=1) / sizes
    best = values[primary][index].masked_fill(~valid, float("-inf")).argmax(dim=1)
    return out, best
