"""Baseline rescaling (BERTScore): ``x' = (x - b) / (1 - b)`` per metric, and baseline files.

``b`` is the mean score of random sentence pairs for the model and layer
(:func:`alignscore.rescale.compute_baseline` computes it). Baseline files use bert_score's format:
CSV text with header ``LAYER,P,R,F`` and one row per layer, row 0 the embeddings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from .errors import ConfigError, InputError

_COLUMNS = {"P": "precision", "R": "recall", "F": "f1"}


def _row_problem(layer: object, row: dict[str, float]) -> str | None:
    """Why ``row`` cannot rescale, or None: each ``b`` must be finite and below 1 (the rescaled
    score divides by ``1 - b``)."""
    if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
        return f"the layer must be an integer >= 0 (0: the embeddings), not {layer!r}"
    for metric, b in row.items():
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b):
            return f"layer {layer}: the {metric} baseline {b!r} is not a finite number"
        if b >= 1:
            return f"layer {layer}: the {metric} baseline {b!r} is not below 1 (rescaling divides by 1 - b)"
    return None


def _layer_list(layers: Sequence[int]) -> str:
    """``0..24`` for consecutive layers, else ``0, 2, 5``."""
    layers = sorted(layers)
    if layers and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}..{layers[-1]}"
    return ", ".join(map(str, layers))


@dataclass(frozen=True)
class Baseline:
    """Per-layer baseline values ``{layer: {"precision": b_P, "recall": b_R, "f1": b_F}}``; each
    ``b`` finite and below 1 (checked here: :class:`~alignscore.errors.ConfigError`). ``source``:
    the file it was read from (absolute), if any."""

    rows: dict[int, dict[str, float]]
    name: str = "baseline"
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.rows, dict) or not self.rows:
            raise ConfigError(f"baseline {self.name}: rows must be a non-empty dict {{layer: {{metric: b}}}}")
        for layer, row in self.rows.items():
            problem = _row_problem(layer, row) if isinstance(row, dict) else f"layer {layer!r}: not a dict"
            if problem:
                raise ConfigError(f"baseline {self.name}: {problem}")

    @classmethod
    def read(cls, path: str | Path) -> "Baseline":
        """Read a bert_score baseline file: header ``LAYER,P,R,F``, then one row per layer, each
        taken by its LAYER column (an integer, once), with finite values below 1."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read baseline file: {exc}", str(path)) from None
        numbered = [(n, ln) for n, ln in enumerate(lines, start=1) if ln.strip()]
        if not numbered or [c.strip() for c in numbered[0][1].split(",")][1:] != ["P", "R", "F"]:
            raise InputError("not a baseline file: the header must be LAYER,P,R,F", str(path),
                             numbered[0][0] if numbered else None)
        rows: dict[int, dict[str, float]] = {}
        seen: dict[int, int] = {}
        for n, line in numbered[1:]:
            cells = [c.strip() for c in line.split(",")]
            try:
                if len(cells) != 4:
                    raise ValueError
                layer = int(cells[0])
                row = {name: float(c) for name, c in zip(_COLUMNS.values(), cells[1:])}
            except ValueError:
                raise InputError("a baseline row must be LAYER,P,R,F: an integer layer and three numbers",
                                 str(path), n) from None
            if layer in seen:
                raise InputError(f"layer {layer} has a second row (the first is on line {seen[layer]})", str(path), n)
            problem = _row_problem(layer, row)
            if problem:
                raise InputError(problem, str(path), n)
            rows[layer], seen[layer] = row, n
        if not rows:
            raise InputError("the baseline file has no rows", str(path))
        return cls(rows, name=path.name, source=str(path.resolve()))

    def csv(self) -> str:
        """The table as bert_score's baseline file: ``LAYER,P,R,F``, one row per layer."""
        lines = ["LAYER,P,R,F"]
        for layer in sorted(self.rows):
            r = self.rows[layer]
            lines.append(f"{layer}," + ",".join(repr(r[m]) for m in _COLUMNS.values()))
        return "\n".join(lines) + "\n"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.csv(), encoding="utf-8")

    def values(self, layer: int) -> dict[str, float]:
        if layer not in self.rows:
            raise ConfigError(f"baseline {self.name} has no row for layer {layer} "
                              f"(it has layers {_layer_list(list(self.rows))})")
        return self.rows[layer]


def rescale(values: dict[str, torch.Tensor], baseline: dict[str, float]) -> dict[str, torch.Tensor]:
    """``(x - b) / (1 - b)`` for every metric the baseline has; others unchanged."""
    return {k: (v - baseline[k]) / (1 - baseline[k]) if k in baseline else v for k, v in values.items()}
