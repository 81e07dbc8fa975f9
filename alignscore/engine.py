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
from typing import Mapping, Sequence

import torch

from .aligners.base import Aligner
from .batching import AlignerInputs, batch_order, padded_blocks, pair_batch, pair_batches
from .composition import Composition
from .encoders.base import Encoder
from .encoding import Encoded, check_vectors, encode, norms_read
from .pairs import Blocks, Pairs, merge_pairs, texts_only, unique_texts
from .remap import Remapping
from .runtime import Runtime
from .tokens import TokenTable
from .weighting.base import Weighting

Weights = tuple[torch.Tensor, torch.Tensor]


# Why a side of a pair carries no mass (:func:`empty_reasons`); 0: it does.
EMPTY_REASONS = {1: "empty text", 2: "every token taken out by the token roles", 3: "every token weighs 0"}


@dataclass
class PairScores:
    """One composition's scores per pair, and why a side carries no mass.

    Parameters
    ----------
    metrics : dict of str to torch.Tensor
        ``{output: [P]}``, in the aligner's order.
    reasons : torch.Tensor
        ``[P, 2]``: why the reference / candidate side carries no mass (:data:`EMPTY_REASONS`; 0: it does).

    Examples
    --------
    >>> scores = PairScores({"f1": torch.tensor([0.9, 0.0])}, torch.tensor([[0, 0], [1, 0]]))
    >>> scores.empty.tolist()   # the second pair's reference is an empty text
    [False, True]
    """

    metrics: dict[str, torch.Tensor]
    reasons: torch.Tensor

    @property
    def empty(self) -> torch.Tensor:
        """``[P]`` (or the shape of the metrics) bool: pairs where either side carries no mass
        (they score 0)."""
        return (self.reasons > 0).any(-1)


def fit_weights(weighting: Weighting, encoded: Encoded, encoder: Encoder) -> Weights:
    """``weighting`` fitted on the pairs' texts.

    Parameters
    ----------
    weighting : Weighting
        The weighting to fit.
    encoded : Encoded
        The pairs and their texts' tokens (each text's documents: :class:`~alignscore.pairs.Pairs`).
    encoder : Encoder
        Its tokenizer reads an outside corpus (idf-L).

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
    >>> ref, cand = fit_weights(IdfS(), encoded, encoder)
    >>> [round(w, 4) for w in ref[encoded.table.ids[:5]].tolist()]   # [CLS] the cat sat [SEP]: log(3/2)
    [0.0, 0.4055, 0.4055, 0.4055, 0.0]
    """
    p = encoded.pairs
    return weighting.fit(encoded.table, p.ref_counts, p.cand_counts, encoder)


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
                fitted[w_sig] = fit_weights(comp.weighting, encoded, encoder)
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
            out[key] = AlignerInputs(vectors, ref_mass, cand_mass, matchable.to(device), carries.cpu(),
                                     remapped.get((a_sig, m_sig)))
        result.append(out[key])
    return result


def remap_vectors(remap: Remapping, vectors: torch.Tensor) -> torch.Tensor:
    """``vectors [N, D]`` remapped (:meth:`~alignscore.remap.Remapping.apply`) and unit-normalised
    again, as every encoder's vectors are (a vector of 0 stays 0).

    Parameters
    ----------
    remap : Remapping
        The map toward the candidates' language.
    vectors : torch.Tensor
        ``[N, D]`` unit vectors.

    Returns
    -------
    torch.Tensor
        ``[N, D]``, unit length (0 where the map gives 0).

    Examples
    --------
    >>> from alignscore.remap import Remapping
    >>> umd = Remapping("umd", torch.tensor([0.0, 1.0], dtype=torch.float64), "m", "0" * 64, 8)
    >>> remap_vectors(umd, torch.tensor([[0.6, 0.8], [0.0, 0.0]])).tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    out = remap.apply(vectors)
    return out / out.norm(dim=-1, keepdim=True).clamp(min=torch.finfo(out.dtype).tiny)


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


def empty_reasons(encoded: Encoded, inputs: AlignerInputs) -> torch.Tensor:
    """Why the reference / candidate side of each pair carries no mass.

    Parameters
    ----------
    encoded : Encoded
        The pairs and their texts' tokens.
    inputs : AlignerInputs
        One composition's masses over ``encoded.table``.

    Returns
    -------
    torch.Tensor
        ``[P, 2]`` int8 (:data:`EMPTY_REASONS`: 1 an empty text, 2 the token roles took every
        token out, 3 every token weighs 0), 0 where it does.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder(); greedy = Composition().resolve(encoder)
    >>> encoded = encode(encoder, Pairs.from_pairs(["the cat sat", ""], ["a cat", "a dog"]), [greedy.aggregator])
    >>> empty_reasons(encoded, aligner_inputs(encoded, [greedy], encoder)[0]).tolist()
    [[0, 0], [1, 0]]
    """
    reasons, p = text_reasons(encoded.table, inputs), encoded.pairs
    return torch.stack([reasons[p.ref, 0], reasons[p.cand, 1]], 1)


def text_reasons(table: TokenTable, inputs: AlignerInputs) -> torch.Tensor:
    """Why each unique text carries no mass as a reference / as a candidate.

    Parameters
    ----------
    table : TokenTable
        The unique texts' tokens.
    inputs : AlignerInputs
        One composition's masses over ``table``.

    Returns
    -------
    torch.Tensor
        ``[U, 2]`` int8 (:data:`EMPTY_REASONS`), 0 where it does.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> encoder = WordEncoder(); greedy = Composition().resolve(encoder)
    >>> encoded = encode(encoder, Pairs.from_pairs(["the cat sat", ""], ["a cat", "a dog"]), [greedy.aggregator])
    >>> encoded.pairs.texts, text_reasons(encoded.table, aligner_inputs(encoded, [greedy], encoder)[0]).tolist()
    (['the cat sat', '', 'a cat', 'a dog'], [[0, 0], [1, 1], [0, 0], [0, 0]])
    """
    text = table.text_index()

    def per_text(x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(table), dtype=torch.float64).index_add_(0, text, x.detach().double().cpu())

    words, carrying = per_text(~table.special), per_text(inputs.carries)

    def reason(mass: torch.Tensor) -> torch.Tensor:
        return (per_text(mass) <= 0) * torch.where(words == 0, 1, torch.where(carrying == 0, 2, 3))

    return torch.stack([reason(inputs.ref_mass), reason(inputs.cand_mass)], 1).to(torch.int8)


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
           "aligner_inputs", "batch_order", "check_vectors", "empty_reasons", "encode", "fit_weights", "merge_pairs",
           "norms_read", "padded_blocks", "pair_batch", "pair_batches", "score_groups", "score_many", "text_reasons",
           "unique_texts"]
