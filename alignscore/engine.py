"""The engine: texts, pairs and compositions -> per-pair scores. Everything that scores calls it.

For one encoder and any number of compositions (:class:`~alignscore.composition.Composition`,
resolved for that encoder's model):

1. the unique texts are tokenized once (:class:`~alignscore.pairs.Pairs` holds them and the
   pairs over them);
2. each distinct weighting (by signature) is fitted once, each distinct token-roles part applied
   once;
3. one encoding: a forward pass per batch produces every layer any composition reads, every
   distinct aggregator is applied in that pass, and its unit vectors are kept (views of one
   buffer: :func:`~alignscore.encoding.encode`);
4. compositions that share the aggregator, token roles and weighting share their
   :class:`AlignerInputs` (vectors and masses); the pairs are aligned in batches of similar
   length, each batch's vectors gathered once for all the inputs over one aggregator's vectors,
   and the aligners of one class score all their inputs of a batch together
   (:meth:`~alignscore.aligners.base.Aligner.score_together`, which shares their similarity,
   inner-product or cost matrices).

A composition's scores are those it would get alone: aligners score each pair on its own, so
only the batches differ, which changes nothing beyond float rounding. All-against-all blocks
(``Scorer.pairwise``, MBR) are scored by :mod:`alignscore.blocks` over the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Sequence

import torch

from .aligners.base import Aligner, PairBatch
from .batching import batch_order, padded_blocks
from .composition import Composition
from .encoders.base import Encoder
from .encoding import Encoded, check_vectors, encode, norms_read
from .pairs import Blocks, Pairs, merge_pairs, texts_only, unique_texts
from .pairscores import EMPTY_REASONS, PairScores, empty_reasons, text_reasons
from .remap import remap_vectors
from .runtime import Runtime
from .tokens import TokenTable, pad_gather
from .weighting.base import Weighting

Weights = tuple[torch.Tensor, torch.Tensor]


@dataclass
class AlignerInputs:
    """What an aligner sees for one composition, over the packed tokens of the unique texts.

    Parameters
    ----------
    vectors, ref_mass, cand_mass : torch.Tensor
        ``[N, D]`` unit token vectors; ``[N]`` each token's mass when its text is the reference / the candidate.
    matchable, carries : torch.Tensor
        ``[N]`` bool: who may be aligned to; who the token roles let carry mass (on the CPU).
    ref_vectors : torch.Tensor, optional
        ``[N, D]``: the reference side's vectors where they differ (a source's, remapped).
    norms, ref_norms : torch.Tensor, optional
        ``[N]``: the vectors' lengths before unit scaling, where an aligner reads them; the
        reference side's where it is remapped.

    Examples
    --------
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
    norms: torch.Tensor | None = None  # [N] the vectors' lengths before unit scaling, when kept
    ref_norms: torch.Tensor | None = None  # [N] the same on the reference side where it is remapped

    @property
    def reference_vectors(self) -> torch.Tensor:
        """The vectors of the reference side."""
        return self.vectors if self.ref_vectors is None else self.ref_vectors


def token_weights(weighting: Weighting, encoded: Encoded, encoder: Encoder) -> Weights:
    """``weighting`` fitted on the pairs' texts.

    Parameters
    ----------
    weighting, encoder : Weighting, Encoder
        The weighting to fit; the encoder whose tokenizer reads an outside corpus (idf-L).
    encoded : Encoded
        The pairs and their texts' tokens (each text's documents: :class:`~alignscore.pairs.Pairs`).

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ``(ref [V], cand [V])``: a weight per token id on each side.

    Examples
    --------
    >>> from alignscore import IdfS
    >>> from alignscore.testing import WordEncoder
    >>> encoder, pairs = WordEncoder(), Pairs.from_pairs(["the cat sat", ""], ["a cat", "a dog"])
    >>> encoded = encode(encoder, pairs, [Composition().resolve(encoder).aggregator])
    >>> ref, cand = token_weights(IdfS(), encoded, encoder)
    >>> [round(w, 4) for w in ref[encoded.table.ids[:5]].tolist()]   # [CLS] the cat sat [SEP]: log(3/2)
    [0.0, 0.4055, 0.4055, 0.4055, 0.0]
    """
    p = encoded.pairs
    return weighting.token_weights(encoded.table, p.ref_counts, p.cand_counts, encoder)


def aligner_inputs(encoded: Encoded, compositions: Sequence[Composition], encoder: Encoder,
                   weights: Mapping[str, Weights] | None = None,
                   roles: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None) -> list[AlignerInputs]:
    """The :class:`AlignerInputs` of each composition; compositions with the same aggregator, token
    roles and weighting share one.

    Parameters
    ----------
    encoded : Encoded
        The pairs' texts encoded for every composition's aggregator (:func:`encode`).
    compositions : sequence of Composition
        Resolved for ``encoder``.
    encoder : Encoder
        For the weightings (an idf-L corpus is tokenized by it).
    weights : mapping of str to (Tensor, Tensor), optional
        Weights fitted elsewhere (on a whole stream, or summed over processes) by weighting
        signature; the others are fitted here on ``encoded.pairs``.
    roles : dict, optional
        The token roles over ``encoded.table`` by signature, filled in here (callers that score
        several sets of pairs over one table pass the same dict: roles depend on the texts only).

    Returns
    -------
    list of AlignerInputs
        One per composition, in order (shared objects where they are equal).

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder(); greedy = Composition().resolve(encoder)
    >>> encoded = encode(encoder, Pairs.from_pairs(["the cat sat", ""], ["a cat", "a dog"]), [greedy.aggregator])
    >>> from alignscore import WMD
    >>> first, second = aligner_inputs(encoded, [greedy, Composition(aligner=WMD()).resolve(encoder)], encoder)
    >>> first is second, first.vectors.shape   # the aligner is no part of the inputs
    (True, torch.Size([15, 8]))
    """
    fitted: dict[str, Weights] = dict(weights or {})
    roles = {} if roles is None else roles
    out: dict[tuple[str, str, str, str], AlignerInputs] = {}
    table = encoded.table
    result = []
    remapped: dict[tuple[str, str], torch.Tensor] = {}
    for comp in compositions:
        a_sig, r_sig, w_sig = comp.aggregator.signature(), comp.roles.signature(), comp.weighting.signature()
        m_sig = comp.remap.digest() if comp.remap is not None else ""
        key = (a_sig, r_sig, w_sig, m_sig)
        if key not in out:
            if w_sig not in fitted:
                fitted[w_sig] = token_weights(comp.weighting, encoded, encoder)
            if r_sig not in roles:
                roles[r_sig] = comp.roles(table)
            vectors = encoded.vectors[a_sig]
            (ref_w, cand_w), (carries, matchable) = fitted[w_sig], roles[r_sig]
            device = vectors.device
            ref_mass, cand_mass = (ref_w[table.ids] * carries).to(device), (cand_w[table.ids] * carries).to(device)
            multipliers = comp.weighting.token_multipliers(table)
            if multipliers is not None:  # token-class weights, per occurrence
                ref_mass, cand_mass = ref_mass * multipliers.to(device), cand_mass * multipliers.to(device)
            if comp.weighting.reads_norms():
                if a_sig not in encoded.norms:
                    raise ValueError(f"weighting {w_sig} reads the norms of {a_sig}'s vectors, which were not "
                                     "kept: encode(..., norms=norms_read(compositions))")
                ref_mass, cand_mass = ref_mass * encoded.norms[a_sig], cand_mass * encoded.norms[a_sig]
            if comp.remap is not None and (a_sig, m_sig) not in remapped:
                remapped[a_sig, m_sig] = remap_vectors(comp.remap, vectors)
            norms = encoded.norms.get(a_sig)
            if comp.aligner.reads_norms() and norms is None:
                raise ValueError(f"aligner {comp.aligner.signature()} reads the norms of {a_sig}'s vectors, which "
                                 "were not kept: encode(..., norms=norms_read(compositions))")
            ref_norms = None
            if norms is not None and comp.remap is not None:  # |apply(v)| = |v| |apply(v / |v|)| (linear maps)
                ref_norms = norms * comp.remap.apply(vectors).norm(dim=-1).to(norms)
            out[key] = AlignerInputs(vectors, ref_mass, cand_mass, matchable.to(device), carries.cpu(),
                                     remapped.get((a_sig, m_sig)), norms, ref_norms)
        result.append(out[key])
    return result


def pair_batch(inputs: AlignerInputs, table: TokenTable, ref: torch.Tensor, cand: torch.Tensor,
               like: PairBatch | None = None) -> PairBatch:
    """The right-padded :class:`PairBatch` of pairs ``(ref[k], cand[k])``.

    Padding gets vector 0, mass 0 and is not matchable. The vectors were checked finite when they
    were encoded (:func:`~alignscore.encoding.encode`), so the batch says so.

    Parameters
    ----------
    inputs, table : AlignerInputs, TokenTable
        One composition's vectors and masses (:func:`aligner_inputs`), over the texts' tokens.
    ref, cand : torch.Tensor
        ``[B]`` int64 unique-text indices.
    like : PairBatch, optional
        A batch of the same pairs over the same vectors: its vectors are reused (only masses differ).

    Returns
    -------
    PairBatch
        ``B`` pairs on the vectors' device.

    Examples
    --------
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
    norms = {}
    if inputs.norms is not None:
        ref_norms = inputs.norms if inputs.ref_norms is None else inputs.ref_norms
        norms = dict(ref_norm=ref_norms.to(device)[r_idx] * r_ok, cand_norm=inputs.norms.to(device)[c_idx] * c_ok)
    return PairBatch(ref=padded_blocks(inputs.reference_vectors, r_idx, r_ok),
                     cand=padded_blocks(inputs.vectors, c_idx, c_ok), finite=True, **masses, **norms)


def pair_batches(encoded: Encoded, inputs: AlignerInputs, runtime: Runtime = Runtime()
                 ) -> Iterator[tuple[torch.Tensor, PairBatch]]:
    """Every pair in batches of ``runtime.pair_batch_size``, in input order (for inspecting
    alignments: ``alignscore show``).

    Parameters
    ----------
    encoded, inputs : Encoded, AlignerInputs
        The pairs and their texts' tokens; one composition's vectors and masses over them.
    runtime : Runtime
        Its ``pair_batch_size``.

    Returns
    -------
    iterator of (torch.Tensor, PairBatch)
        Each batch's pair indices and the batch (:func:`pair_batch`).

    Examples
    --------
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


def align(encoded: Encoded, compositions: Sequence[Composition], inputs: Sequence[AlignerInputs],
          runtime: Runtime = Runtime()) -> list[dict[str, torch.Tensor]]:
    """Every composition's outputs per pair, ``{output: [P]}``, in pair order, on the CPU.

    The scores stay on the vectors' device until every batch is aligned and come to the host
    once (no synchronisation per batch). Distinct (inputs, aligner) combinations are aligned
    once; those over the same vectors share each batch's gathered vectors, and the aligners of
    one class get their combinations together (``score_together``). With a shard, this process
    aligns its share of the batches and every process receives every score.

    Parameters
    ----------
    encoded : Encoded
        The pairs and their texts' vectors (:func:`encode`).
    compositions : sequence of Composition
        Resolved for the encoder.
    inputs : sequence of AlignerInputs
        Each composition's vectors and masses (:func:`aligner_inputs`).
    runtime : Runtime
        Pair batch size, shard, progress.

    Returns
    -------
    list of dict of str to torch.Tensor
        Per composition, ``{metric: [P]}``.

    Examples
    --------
    >>> from alignscore.aligners import WMD
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder(); greedy = Composition().resolve(encoder)
    >>> encoded = encode(encoder, Pairs.from_pairs(["the cat sat", ""], ["a cat", "a dog"]), [greedy.aggregator])
    >>> comps = [greedy, Composition(aligner=WMD()).resolve(encoder)]
    >>> bert, wmd = align(encoded, comps, aligner_inputs(encoded, comps, encoder))
    >>> [round(f, 3) for f in bert["f1"].tolist()], list(wmd)   # an empty reference scores 0
    ([0.795, 0.0], ['score'])
    """
    jobs: dict[tuple[int, str], list[int]] = {}  # (inputs, aligner signature) -> compositions
    aligners: dict[tuple[int, str], Aligner] = {}
    for i, (comp, s) in enumerate(zip(compositions, inputs)):
        key = (id(s), comp.aligner.signature())
        jobs.setdefault(key, []).append(i)
        aligners[key] = comp.aligner
    by_vectors: dict[tuple[int, int], list[tuple[int, str]]] = {}
    inputs_of = {id(s): s for s in inputs}
    for key in jobs:
        s = inputs_of[key[0]]
        by_vectors.setdefault((id(s.vectors), id(s.reference_vectors)), []).append(key)

    p, table = encoded.pairs, encoded.table
    order = batch_order(encoded)
    size = runtime.pair_batch_size
    starts = range(0, len(order), size)
    results: dict[tuple[int, str], dict[str, torch.Tensor]] = {key: {} for key in jobs}
    done = []
    for b in runtime.bar(runtime.mine(len(starts)), "aligning"):
        sel = order[starts[b]:starts[b] + size]
        done.append(sel)
        for keys in by_vectors.values():
            base = pair_batch(inputs_of[keys[0][0]], table, p.ref[sel], p.cand[sel])
            # aligner class -> aligner signature -> its (inputs, aligner signature) keys
            by_class: dict[type[Aligner], dict[str, list[tuple[int, str]]]] = {}
            for key in keys:
                by_class.setdefault(type(aligners[key]), {}).setdefault(key[1], []).append(key)
            for cls, by_aligner in by_class.items():
                groups = list(by_aligner.values())
                work = [(aligners[same[0]], [base if key == keys[0] else
                                             pair_batch(inputs_of[key[0]], table, p.ref[sel], p.cand[sel], like=base)
                                             for key in same]) for same in groups]
                for same, outputs in zip(groups, cls.score_together(work)):
                    for key, scores in zip(same, outputs):
                        for name, value in scores.items():
                            if name not in results[key]:
                                results[key][name] = torch.zeros(len(order), dtype=value.dtype, device=value.device)
                            results[key][name][sel.to(value.device)] = value.detach()
    if runtime.shard is not None:
        rows = torch.cat(done) if done else torch.empty(0, dtype=torch.long)
        results = {key: {name: runtime.shard.gather(values[name][rows] if name in values else torch.empty(0),
                                                     rows, len(order))
                         for name in aligners[key].metrics}
                   for key, values in results.items()}
    results = {key: {name: value.cpu() for name, value in values.items()} for key, values in results.items()}
    out = []
    for comp, s in zip(compositions, inputs):
        values = results[(id(s), comp.aligner.signature())]
        out.append({name: values.get(name, torch.zeros(0)) for name in comp.metrics})
    return out


def score_many(encoder: Encoder, pairs: Pairs, compositions: Sequence[Composition], runtime: Runtime = Runtime(),
               weights: Mapping[str, Weights] | None = None) -> list[PairScores]:
    """Score every pair with every composition, encoding each unique text once.

    Parameters
    ----------
    encoder : Encoder
        The encoder (a scorer's :meth:`~alignscore.scorer.Scorer.scoring_encoder`).
    pairs : Pairs
        The pairs, over unique texts (:meth:`~alignscore.pairs.Pairs.from_groups`).
    compositions : sequence of Composition
        Each resolved for ``encoder`` (:meth:`~alignscore.composition.Composition.resolve`).
    runtime : Runtime
        How to run; changes a score by float rounding at most.
    weights : mapping of str to (Tensor, Tensor), optional
        Weights fitted elsewhere, by weighting signature (the others are fitted on ``pairs``).

    Returns
    -------
    list of PairScores
        One per composition, in order: ``{metric: [P]}`` per pair, and why a side is empty.

    Examples
    --------
    >>> from alignscore import WMD, Composition
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()
    >>> pairs = Pairs.from_groups(["the cat sat", "a dog"], [["the cat sat down"], ["the dog", "a dog ran"]])
    >>> greedy, wmd = score_many(encoder, pairs, [Composition().resolve(encoder),
    ...                                           Composition(aligner=WMD()).resolve(encoder)])
    >>> [round(f, 4) for f in greedy.metrics["f1"].tolist()], list(wmd.metrics)   # one score per pair
    ([0.8649, 0.6262, 0.8793], ['score'])
    """
    return score_groups(encoder, [pairs], [compositions], runtime, weights)[0]


def score_groups(encoder: Encoder, groups: Sequence[Pairs], compositions: Sequence[Sequence[Composition]],
                 runtime: Runtime = Runtime(), weights: Mapping[str, Weights] | None = None
                 ) -> list[list[PairScores]]:
    """:func:`score_many` for several sets of pairs (the language pairs of a data set), each with
    its own compositions and its own weights (idf fitted on its own texts), over one encoding of
    the union of their texts.

    Parameters
    ----------
    encoder, runtime, weights
        As for :func:`score_many`.
    groups : sequence of Pairs
        The sets of pairs.
    compositions : sequence of sequences of Composition
        Per set, its compositions (resolved for ``encoder``).

    Returns
    -------
    list of lists of PairScores
        Per set, one per composition, in order.

    Examples
    --------
    >>> from alignscore import WMD, Composition
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder()
    >>> greedy, wmd = Composition().resolve(encoder), Composition(aligner=WMD()).resolve(encoder)
    >>> groups = [Pairs.from_pairs(["the cat"], ["a cat"]), Pairs.from_pairs(["a dog", "the dog"], ["a dog", "dog"])]
    >>> [[list(s.metrics) for s in scored] for scored in score_groups(encoder, groups, [[greedy], [greedy, wmd]])]
    [[['precision', 'recall', 'f1']], [['precision', 'recall', 'f1'], ['score']]]
    """
    merged = merge_pairs(groups)
    aggregators = [c.aggregator for comps in compositions for c in comps]
    everything = encode(encoder, merged[0] if len(merged) == 1 else texts_only(merged), aggregators, runtime,
                        norms=norms_read(c for comps in compositions for c in comps))
    out = []
    roles: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for pairs, comps in zip(merged, compositions):
        encoded = replace(everything, pairs=pairs)
        inputs = aligner_inputs(encoded, comps, encoder, weights, roles)
        scores = align(encoded, comps, inputs, runtime)
        out.append([PairScores(s, empty_reasons(encoded, st)) for s, st in zip(scores, inputs)])
    return out


__all__ = ["EMPTY_REASONS", "AlignerInputs", "Blocks", "Encoded", "PairScores", "Pairs", "Weights", "align",
           "aligner_inputs", "batch_order", "check_vectors", "empty_reasons", "encode", "token_weights", "merge_pairs",
           "norms_read", "pair_batch", "pair_batches", "score_groups", "score_many", "text_reasons", "unique_texts"]
