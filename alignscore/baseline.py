"""Computing a rescaling baseline for any model: BERTScore's ``b``, the mean score of random
sentence pairs, for every layer (the file format and the formula ``x' = (x - b) / (1 - b)`` are in
:mod:`alignscore.rescale`)."""

from __future__ import annotations

import random
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from tqdm.auto import tqdm

from .aggregators.single import SingleLayer
from .rescale import _COLUMNS, Baseline
from .composition import Composition
from .encoders.base import Encoder
from .engine import Pairs, score_many
from .errors import ConfigError
from .runtime import Runtime

if TYPE_CHECKING:
    from .config import RunSpec

__all__ = ["baseline_file", "compute_baseline"]


def compute_baseline(encoder: Encoder, texts: Sequence[str], pairs: int = 10_000, seed: int = 0,
                     runtime: Runtime = Runtime(), chunk: int = 1024) -> Baseline:
    """Mean BERTScore P, R, F of ``pairs`` random pairs of distinct lines of ``texts``, for every
    layer 0..L of the encoder (no idf, special tokens match-only: bert_score's own setting).

    Pairs are drawn uniformly with a seeded generator; blank lines are skipped, and lines are
    compared (a pair must be of two different lines) stripped, as they are scored. Every layer is
    scored from one encoding (one composition per layer through the engine); pairs are processed
    ``chunk`` at a time so memory stays bounded for any model depth.

    Parameters
    ----------
    encoder : Encoder
        The model whose layers get a baseline.
    texts : sequence of str
        The corpus, one sentence each; at least two different non-blank ones.
    pairs : int
        How many random pairs are scored.
    seed : int
        The seed of the draw (the same seed, the same pairs).
    runtime : Runtime
        Batching and device; changes a value by float rounding at most.
    chunk : int
        Pairs scored at a time.

    Returns
    -------
    Baseline
        One row per layer ``0..num_layers``, named after the encoder, ``pairs`` and ``seed``.

    Examples
    --------
    >>> from alignscore.testing import WordEncoder
    >>> b = compute_baseline(WordEncoder(), ["the cat sat", "a dog ran", "the dog sat down"], pairs=20)
    >>> b.name, sorted(b.rows), 0 < b.rows[3]["f1"] < 1
    ('computed(words,pairs=20,seed=0)', [0, 1, 2, 3], True)
    """
    texts = [t.strip() for t in texts if t.strip()]  # as scoring sees them
    if len(set(texts)) < 2:
        raise ConfigError("a baseline needs a corpus of at least two different non-empty lines "
                          "(compared without their leading and trailing whitespace)")
    rng = random.Random(seed)
    drawn = []
    while len(drawn) < pairs:
        i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
        if texts[i] != texts[j]:
            drawn.append((i, j))
    layers = list(range(encoder.num_layers + 1))
    compositions = [Composition(SingleLayer(layer)) for layer in layers]
    sums = {layer: {m: 0.0 for m in _COLUMNS.values()} for layer in layers}
    for start in tqdm(range(0, pairs, chunk), desc="baseline", disable=not runtime.progress, file=sys.stderr):
        part = drawn[start:start + chunk]
        batch = Pairs.from_pairs([texts[j] for _, j in part], [texts[i] for i, _ in part])
        for layer, result in zip(layers, score_many(encoder, batch, compositions, replace(runtime, progress=False))):
            for m in _COLUMNS.values():
                sums[layer][m] += float(result.metrics[m].double().sum())
    return Baseline({layer: {m: s / pairs for m, s in row.items()} for layer, row in sums.items()},
                    name=f"computed({encoder.name},pairs={pairs},seed={seed})")


def baseline_file(spec: RunSpec, corpus: str, output: str | None, pairs: int = 10_000, seed: int = 0) -> Baseline:
    """:func:`compute_baseline` of the encoder (with its cache) and runtime of ``spec`` on the
    lines of ``corpus``, written as CSV to ``output`` (None: standard output), which is checked
    before any work."""
    from .encoders import encoder_of
    from .textio import check_output, read_lines, write_output

    check_output(output, [corpus, *spec.files()])  # before any work: writable, and not an input
    encoder = encoder_of(spec.encoder, spec.runtime.device, spec.runtime.name)
    if spec.cache is not None:
        from .encoders.cached import CachedEncoder

        encoder = CachedEncoder(encoder, spec.cache.build())
    result = compute_baseline(encoder, read_lines(corpus), pairs=pairs, seed=seed, runtime=spec.runtime)
    write_output(output, result.csv())
    return result
