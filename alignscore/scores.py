"""Per-candidate scores: the reduction of per-pair scores over each candidate's references, the
rescaling, and the checks of what a caller passes as candidates and references."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import torch

from .baseline import rescale
from .errors import InputError

__all__ = ["Scores", "check_references", "reduce", "reduce_groups"]


@dataclass
class Scores:
    """Scores per candidate, in input order, by metric name (``scores.f1``, ``scores["f1"]``).

    ``best_reference[i]`` is the index, among candidate i's references, of the one with the best
    primary score (F1 for greedy); ``empty`` marks candidates scored against an empty text;
    ``signature`` pins every setting that changes a number.
    """

    metrics: dict[str, torch.Tensor]
    best_reference: torch.Tensor
    empty: torch.Tensor
    signature: str

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.metrics[name]

    def __getattr__(self, name: str) -> torch.Tensor:
        metrics = self.__dict__.get("metrics", {})
        if name in metrics:
            return metrics[name]
        raise AttributeError(name)

    def __len__(self) -> int:
        return len(self.best_reference)

    def means(self) -> dict[str, float]:
        return {k: float(v.double().mean()) if len(v) else float("nan") for k, v in self.metrics.items()}


def check_references(cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    if isinstance(cands, str) or isinstance(refs, str):
        raise InputError("candidates and references must be lists of texts, not a single string")
    if len(refs) != len(cands):
        raise InputError(f"{len(cands)} candidates but {len(refs)} references (or reference groups)")
    groups = [[r] if isinstance(r, str) else list(r) for r in refs]
    for i, g in enumerate(groups):
        if not g:
            raise InputError(f"candidate {i} has no reference")
        if not all(isinstance(t, str) for t in g):
            raise InputError(f"reference group {i} holds something that is not a text")
    return groups


def reduce(metrics: dict[str, torch.Tensor], empty: torch.Tensor, groups: torch.Tensor, primary: str, how: str,
           baseline: dict[str, float] | None, signature: str) -> Scores:
    """Per-pair scores -> per-candidate :class:`Scores`: warn about empty pairs, reduce several
    references (``how``), name the best one by ``primary``, rescale with ``baseline``."""
    if bool(empty.any()):
        warnings.warn(f"{int(empty.sum())} pair(s) have an empty text (nothing left to align); "
                      f"they score 0", stacklevel=4)
    reduced, best = reduce_groups(metrics, groups, primary, how)
    empty_any = reduce_groups({"e": empty.float()}, groups, "e", "max")[0]["e"] > 0
    if baseline is not None:
        reduced = rescale(reduced, baseline)
    return Scores(reduced, best, empty_any, signature)


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
