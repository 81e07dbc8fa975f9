"""Baseline rescaling (BERTScore): ``x' = (x - b) / (1 - b)`` per metric.

``b`` is the mean score of random sentence pairs for the model and layer. Baseline files use
bert_score's format: CSV text with header ``LAYER,P,R,F`` and one row per layer, row 0 the
embeddings.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from tqdm.auto import tqdm

from .aligners.greedy import Greedy
from .encoders.base import Encoder
from .errors import ConfigError, InputError
from .filters.base import token_roles
from .pipeline import align_pairs, embed, unique_texts, unit
from .tokens import TokenTable

_COLUMNS = {"P": "precision", "R": "recall", "F": "f1"}


@dataclass(frozen=True)
class Baseline:
    """Per-layer baseline values ``{layer: {"precision": b_P, "recall": b_R, "f1": b_F}}``."""

    rows: dict[int, dict[str, float]]
    name: str = "baseline"

    @classmethod
    def read(cls, path: str | Path) -> "Baseline":
        """Read a bert_score baseline file (``LAYER,P,R,F``; row order gives the layer)."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read baseline file: {exc}", str(path)) from None
        lines = [ln for ln in lines if ln.strip()]
        if not lines or [c.strip() for c in lines[0].split(",")][1:] != ["P", "R", "F"]:
            raise InputError("not a baseline file: the header must be LAYER,P,R,F", str(path), 1)
        rows = {}
        for n, line in enumerate(lines[1:], start=2):
            cells = line.split(",")
            try:
                if len(cells) != 4:
                    raise ValueError
                rows[n - 2] = {name: float(c) for name, c in zip(_COLUMNS.values(), cells[1:])}
            except ValueError:
                raise InputError("a baseline row must be LAYER,P,R,F with numbers", str(path), n) from None
        return cls(rows, name=path.name)

    def write(self, path: str | Path) -> None:
        lines = ["LAYER,P,R,F"]
        for layer in sorted(self.rows):
            r = self.rows[layer]
            lines.append(f"{layer}," + ",".join(repr(r[m]) for m in _COLUMNS.values()))
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")

    def values(self, layer: int) -> dict[str, float]:
        if layer not in self.rows:
            raise ConfigError(f"baseline {self.name} has no row for layer {layer} (rows 0..{len(self.rows) - 1})")
        return self.rows[layer]


def rescale(values: dict[str, torch.Tensor], baseline: dict[str, float]) -> dict[str, torch.Tensor]:
    """``(x - b) / (1 - b)`` for every metric the baseline has; others unchanged."""
    return {k: (v - baseline[k]) / (1 - baseline[k]) if k in baseline else v for k, v in values.items()}


def compute_baseline(encoder: Encoder, texts: Sequence[str], pairs: int = 10_000, seed: int = 0,
                     batch_size: int = 64, chunk: int = 1024, progress: bool = False) -> Baseline:
    """Mean BERTScore P, R, F of ``pairs`` random pairs of distinct lines of ``texts``, for every
    layer 0..L of the encoder (no idf, special tokens match-only: bert_score's own setting).

    Pairs are drawn uniformly with a seeded generator; blank lines are skipped. Pairs are
    processed ``chunk`` at a time so memory stays bounded for any model depth.
    """
    texts = [t for t in texts if t.strip()]
    if len(set(texts)) < 2:
        raise ConfigError("a baseline needs a corpus of at least two different non-empty lines")
    rng = random.Random(seed)
    drawn = []
    while len(drawn) < pairs:
        i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
        if texts[i] != texts[j]:
            drawn.append((i, j))
    layers = list(range(encoder.num_layers + 1))
    sums = {layer: {m: 0.0 for m in _COLUMNS.values()} for layer in layers}
    aligner = Greedy()
    for start in tqdm(range(0, pairs, chunk), desc="baseline", disable=not progress, file=sys.stderr):
        part = drawn[start:start + chunk]
        uniq, inverse = unique_texts([texts[i] for i, _ in part] + [texts[j] for _, j in part])
        table = TokenTable.from_tokenized(encoder.tokenize(uniq))
        states = embed(encoder, table, layers, lambda s: s.permute(1, 2, 0, 3).flatten(2),
                       batch_size=batch_size)
        states = states.view(states.shape[0], len(layers), -1)
        mass, matchable = token_roles(table, (), "match-only")
        mass = mass.float().to(states.device)
        matchable = matchable.to(states.device)
        pair_ref, pair_cand = inverse[len(part):], inverse[:len(part)]
        for layer in layers:
            scores = align_pairs(aligner, unit(states[:, layer]), table, mass, mass, matchable,
                                 pair_ref, pair_cand)
            for m in _COLUMNS.values():
                sums[layer][m] += float(scores[m].double().sum())
    return Baseline({layer: {m: s / pairs for m, s in row.items()} for layer, row in sums.items()},
                    name=f"computed({encoder.name},pairs={pairs},seed={seed})")
