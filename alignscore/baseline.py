"""Baseline rescaling (BERTScore): ``x' = (x - b) / (1 - b)`` per metric, and baseline files.

``b`` is the mean score of random sentence pairs for the model and layer
(:func:`alignscore.rescale.compute_baseline` computes it). Baseline files use bert_score's format:
CSV text with header ``LAYER,P,R,F`` and one row per layer, row 0 the embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .errors import ConfigError, InputError

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
