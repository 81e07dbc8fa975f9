"""What the strategies that run an exported graph share: where graphs are kept, the module that is
exported, the probe batch, an atomic write, and the check against PyTorch eager.

A graph computes ``(input_ids, attention_mask) -> [L, B, T, D]`` for one model and one layer set
(:class:`LayersModule`); it is kept under the model's fingerprint and the layers, so another
model, even in the same directory, never reuses it. A new graph is used only once it reproduces
the eager forward pass (:func:`export_error`) on batches of other sizes than the one it was made
from, padded and not.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from .forward import ModelSource, layer_states

PROBE_TEXTS = (
    "A short probe.",
    "A somewhat longer probe sentence, with punctuation, numbers (1,234.5) and rare words: zygote!",
    "Hello world",
)

States = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def default_export_dir() -> Path:
    """``$ALIGNSCORE_EXPORT_DIR``, else ``$XDG_CACHE_HOME/alignscore/exports`` (``~/.cache/...``)."""
    env = os.environ.get("ALIGNSCORE_EXPORT_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "alignscore" / "exports"


def graph_path(export_dir: Path, fingerprint: str, layers: Sequence[int], suffix: str) -> Path:
    """``<export_dir>/<fingerprint>-L<layers><suffix>``."""
    return Path(export_dir) / f"{fingerprint[:40]}-L{'.'.join(map(str, layers))}{suffix}"


class LayersModule(torch.nn.Module):
    """``(input_ids, attention_mask) -> [L, B, T, D]``: what an exported graph computes."""

    def __init__(self, model: torch.nn.Module, layers: Sequence[int]) -> None:
        super().__init__()
        self.model = model
        self.layers = list(layers)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return layer_states(self.model, input_ids, attention_mask, self.layers)


def probe_batch(source: ModelSource) -> dict[str, torch.Tensor]:
    """The probe texts, tokenized and right-padded (their lengths differ)."""
    return source.load_tokenizer()(list(PROBE_TEXTS), padding=True, return_tensors="pt")


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then move it into place: a reader never
    sees half a graph, and two processes exporting at once leave one whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export_error(run: States, model: Any, layers: Sequence[int], probe: dict[str, torch.Tensor]) -> float:
    """The largest difference between ``run`` and the eager forward pass over the hidden states
    of real tokens, relative to the largest state (at least 1), on three batches: the padded
    probe, its first two texts cut by one position (another batch and sequence size), and its
    first text alone (no padding at all)."""
    ids, mask = probe["input_ids"], probe["attention_mask"]
    n0 = int(mask[0].sum())
    worst = 0.0
    for i, m in ((ids, mask), (ids[:2, :-1], mask[:2, :-1]), (ids[:1, :n0], mask[:1, :n0])):
        device = next(model.parameters()).device
        with torch.inference_mode():
            want = layer_states(model, i.to(device), m.to(device), layers).float().cpu()
            got = run(i, m).float().cpu()
        valid = m.bool().unsqueeze(0).unsqueeze(-1)
        err = float(((got - want).abs() * valid).max())
        worst = max(worst, err / max(float((want.abs() * valid).max()), 1.0))
    return worst
