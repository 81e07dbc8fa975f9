"""Test helpers shared by several test packages: padded pair batches built by hand, and an
encoder that counts its forward passes."""

from __future__ import annotations

import torch

from alignscore.aligners.base import PairBatch
from alignscore.encoders.huggingface import HFEncoder


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def make_batch(ref: list[torch.Tensor], cand: list[torch.Tensor], ref_mass: list[torch.Tensor],
               cand_mass: list[torch.Tensor], ref_match: list[torch.Tensor] | None = None,
               cand_match: list[torch.Tensor] | None = None) -> PairBatch:
    """Right-pad per-pair tensors into a PairBatch (match defaults to mass > 0)."""
    def pad(rows: list[torch.Tensor], width: int, fill: float | bool = 0) -> torch.Tensor:
        out = []
        for r in rows:
            shape = (width - r.shape[0],) + tuple(r.shape[1:])
            out.append(torch.cat([r, torch.full(shape, fill, dtype=r.dtype)]))
        return torch.stack(out)

    tr = max([r.shape[0] for r in ref] + [0])
    tc = max([c.shape[0] for c in cand] + [0])
    ref_match = ref_match or [m > 0 for m in ref_mass]
    cand_match = cand_match or [m > 0 for m in cand_mass]
    return PairBatch(pad(ref, tr), pad(cand, tc), pad(ref_mass, tr), pad(cand_mass, tc),
                     pad(ref_match, tr, False), pad(cand_match, tc, False))



class CountingEncoder(HFEncoder):
    """An HFEncoder that counts forward passes and the texts they encode."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls, self.texts = 0, 0

    def forward(self, input_ids, attention_mask, layers):
        self.calls += 1
        self.texts += len(input_ids)
        return super().forward(input_ids, attention_mask, layers)
