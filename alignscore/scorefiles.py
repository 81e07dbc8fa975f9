"""A run of ``alignscore score`` as library functions: pairs scored into a score table (a file
or standard output), in chunks into a file (:func:`score_file_stream`), or every text against
every other into a matrix (:func:`score_matrix`). Each returns its summary lines."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from .errors import ConfigError, InputError
from .lm import lm_named
from .scores import Scores, check_idf
from .evaluation.stats import SACREBLEU_SEED
from .textio import check_inputs, check_output, read_lines, replacing, write_scores

if TYPE_CHECKING:
    from .combination import Combination, CombinedScorer
    from .config import Provenance, RunSpec
    from .distributed import Shard
    from .scorer import Scorer

__all__ = ["score_combination", "score_file_stream", "score_matrix", "score_texts"]


def _check_side(spec: RunSpec, against_sources: bool, provenance: Provenance | None) -> None:
    """Refuse, before the model loads, a run that cannot score this side (see
    :meth:`~alignscore.composition.Composition.check_side`), naming the option as it was given."""
    try:
        spec.composition.check_side(against_sources, spec.runtime.name)
    except ConfigError as exc:
        raise provenance.relabel(exc) if provenance is not None else exc from None


def score_matrix(spec: RunSpec, cands: str, output: str, files: Sequence[str] = (),
                 provenance: Provenance | None = None) -> list[str]:
    """Score every line of ``cands`` (row i, candidate) against every line (column j, reference)
    by the run's primary metric and save the ``[N, N]`` float32 matrix with numpy to ``output``.

    Parameters
    ----------
    files : sequence of str
        The other files the run reads, which ``output`` must not be.
    provenance : Provenance, optional
        How the options were given (the model checks name them so).

    Returns
    -------
    list of str
        The matrix's size, metric and mean; the signature.
    """
    import numpy as np

    from .config import build

    check_output(output, [cands, *files])
    texts = read_lines(cands)
    if not texts:
        raise InputError("is empty: there is nothing to score", cands)
    scorer = build(spec, provenance=provenance)  # after the input is read: a bad file is found before the model
    matrix = scorer.pairwise(texts, texts)
    metric = scorer.resolved().metric
    with replacing(output) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, matrix[metric].numpy().astype(np.float32))
    return [f"{len(texts)} x {len(texts)} {metric} matrix: mean={float(matrix[metric].double().mean()):.6f}",
            f"signature: {matrix.signature}"]


def score_file_stream(spec: RunSpec | Combination, cands: str, refs: Sequence[str], output: str, fmt: str = "tsv",
                      resume: bool = False, chunk_size: int = 2000, files: Sequence[str] = (),
                      provenance: Provenance | None = None, against_sources: bool = False) -> list[str]:
    """:func:`~alignscore.stream.score_stream` of the run ``spec`` (or of a combination, its
    parts built together), every input read before the model loads (``provenance``: how the
    options were given; ``against_sources``: ``refs`` is one file of sources).

    Returns
    -------
    list of str
        The candidates (and how many were scored now) with the means; the signature.
    """
    from .combination import Combination
    from .config import build
    from .stream import score_stream

    check_inputs(cands, refs)
    if isinstance(spec, Combination):
        scorer = spec.build(against_sources)  # every part checked for the side, as one run is below
    else:
        _check_side(spec, against_sources, provenance)
        scorer = build(spec, provenance=provenance)
    with lm_named(provenance):
        result = score_stream(scorer, cands, refs, output, fmt=fmt, resume=resume, files=files, chunk_size=chunk_size,
                              against_sources=against_sources)
    means = " ".join(f"{k}={v:.6f}" for k, v in result.means.items())
    return [f"{result.total} candidates ({result.scored} scored now): {means}", f"signature: {result.signature}"]


def score_texts(spec: RunSpec, cands: list[str], refs: list[list[str]], output: str | None, fmt: str = "tsv",
                several_refs: bool = False, human: str | None = None, confidence: bool = False,
                resamples: int = 1000, seed: int = SACREBLEU_SEED, shard: Shard | None = None,
                ray: tuple[str, int, float] | None = None, progress: bool = True,
                provenance: Provenance | None = None, against_sources: bool = False,
                ray_label: str = "ray=") -> list[str]:
    """Score each candidate against its references and write the score table (``fmt`` tsv or
    jsonl) to ``output`` (None: standard output), replacing it whole.

    Parameters
    ----------
    several_refs : bool
        Whether a candidate may have several references (the table names the best one).
    human : str, optional
        A file of human scores, one per candidate: the Pearson r of the primary metric with them.
    confidence : bool
        Also a bootstrap interval of each corpus mean (``resamples``, ``seed``).
    shard : Shard, optional
        This process's place under torchrun; only rank 0 writes.
    ray : (address, actors, gpus), optional
        Score on the Ray cluster at ``address`` with that many actors and GPUs each
        (``ray_label``: the option as the caller names it, for errors).
    provenance : Provenance, optional
        How the options were given (the model checks name them so).
    against_sources : bool
        ``refs`` holds each candidate's source (one each): scored against it, reference-free.

    Returns
    -------
    list of str
        The summary (means, intervals, r, signature); none on a rank that does not write.
    """
    from .config import build
    from .evaluation.wmt import read_human

    human_scores = read_human(human, len(cands)) if human else None
    _check_side(spec, against_sources, provenance)
    try:
        check_idf(spec.composition, refs)
    except ConfigError as exc:
        raise provenance.relabel(exc) if provenance is not None else exc from None
    scorer = build(replace(spec, runtime=replace(spec.runtime, shard=shard)), provenance=provenance)
    with lm_named(provenance):  # texts the LM cannot read: one line naming it, on Ray or not
        scores = _scored(scorer, spec, cands, refs, several_refs, against_sources, ray, progress, ray_label)
    if shard is not None and shard.rank != 0:
        return []
    return _write(scores, scorer.composition.metric, output, fmt, several_refs, human_scores, confidence, resamples,
                  seed)


def _scored(scorer: Scorer | CombinedScorer, run: RunSpec | Combination, cands: list[str], refs: list[list[str]],
            several_refs: bool, against_sources: bool, ray: tuple[str, int, float] | None, progress: bool,
            ray_label: str) -> Scores:
    """``scorer``'s scores of the pairs (``refs`` holding each candidate's source where
    ``against_sources``), or with ``ray`` those of ``run`` on the Ray cluster."""
    if ray is not None:
        from .integrations.ray import score_pairs

        return score_pairs(cands, refs, run, ray[0], several_refs, concurrency=ray[1], num_gpus=ray[2],
                           progress=progress, sources=against_sources, label=ray_label)
    if against_sources:
        return scorer.score(cands, sources=[group[0] for group in refs])
    return scorer.score(cands, refs)


def _write(scores: Scores, metric: str, output: str | None, fmt: str, several_refs: bool,
           human_scores: Sequence[float] | None, confidence: bool, resamples: int, seed: int) -> list[str]:
    """Write the score table of ``scores`` to ``output`` (None: standard output), replacing it
    whole; return the summary: the means, their intervals, the r of ``metric`` with the human
    scores (both computed before a byte is written), the signature."""
    from .evaluation.agreement import confidence_text, corpus_intervals, human_r
    from .stream import clear_sidecar

    r = human_r(scores[metric], human_scores, metric) if human_scores is not None else None
    intervals = corpus_intervals(scores, resamples, seed) if confidence else {}
    extra = [f"# confidence {confidence_text(intervals)}\n"] if intervals else []
    if output:
        with replacing(output) as tmp:
            with open(tmp, "w", encoding="utf-8") as fh:
                write_scores(scores, fh, fmt, several_refs, extra)
            clear_sidecar(output)  # before the rename: OUT never sits next to another run's signature
    else:
        write_scores(scores, sys.stdout, fmt, several_refs, extra)
    lines = [f"{len(scores)} candidates: " + " ".join(f"{k}={v:.6f}" for k, v in scores.means().items())]
    if intervals:
        lines.append(f"confidence: {confidence_text(intervals)}")
    if r is not None:
        lines.append(f"pearson r({metric}, human) = {r:.12f} (n = {len(human_scores)})")  # type: ignore[arg-type]
    return lines + [f"signature: {scores.signature}"]


def score_combination(combination: Combination, cands: list[str], refs: list[list[str]], output: str | None,
                      fmt: str = "tsv", several_refs: bool = False, human: str | None = None,
                      against_sources: bool = False, confidence: bool = False, resamples: int = 1000,
                      seed: int = SACREBLEU_SEED, ray: tuple[str, int, float] | None = None, progress: bool = True,
                      ray_label: str = "ray=") -> list[str]:
    """:func:`score_texts` for a :class:`~alignscore.combination.Combination`: its score
    (``combined``) and each part's own (``part0``, ...) written to ``output`` (None: standard
    output), replacing it whole; on Ray as :func:`score_texts` with ``ray``.

    Returns
    -------
    list of str
        The means, their intervals with ``confidence``, the r with ``human`` (of the combined
        score), the signature.
    """
    from .combination import METRIC
    from .evaluation.wmt import read_human

    human_scores = read_human(human, len(cands)) if human else None
    scorer = combination.build(against_sources)
    with lm_named(None):
        scores = _scored(scorer, combination, cands, refs, several_refs, against_sources, ray, progress, ray_label)
    return _write(scores, METRIC, output, fmt, several_refs, human_scores, confidence, resamples, seed)
