"""The row model that every rendering reads: per unit of one side of a pair, its label, mass,
matches (greedy) or flows (optimal transport) and contribution to each score; which matrix cells
carry a match or a flow. Rendering loops over tokens freely (it formats, it does not compute
scores)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..explain import PairAlignment


@dataclass
class UnitRow:
    """One unit (token or n-gram) of one side of a pair, as every rendering shows it."""

    index: int
    label: str
    mass: float
    partners: list[tuple[str, float]]
    contributions: list[float]

    def partner_text(self, digits: int) -> str:
        return ", ".join(f"{label} ({v:.{digits}f})" for label, v in self.partners) or "-"


def unit_rows(pair: PairAlignment, side: int) -> tuple[list[str], list[UnitRow]]:
    """The metrics that units on ``side`` (0: reference, 1: candidate) contribute to, and one
    :class:`UnitRow` per unit of that side."""
    labels = pair.ref_labels if side == 0 else pair.cand_labels
    other = pair.cand_labels if side == 0 else pair.ref_labels
    mass = pair.ref_mass if side == 0 else pair.cand_mass
    metrics = side_metrics(pair, side)
    rows = [UnitRow(i, label, float(mass[i]), [(other[j], v) for j, v in partners],
                    [float(pair.contributions[m][side][i]) for m in metrics])
            for i, (label, partners) in enumerate(zip(labels, matches(pair, side)))]
    return metrics, rows


def side_metrics(pair: PairAlignment, side: int) -> list[str]:
    """The metrics that units on ``side`` (0: reference, 1: candidate) contribute to; all
    metrics when no unit contributes anything (an empty pair)."""
    names = [m for m, parts in pair.contributions.items() if bool((parts[side] != 0).any())]
    if not any(bool((parts[0] != 0).any() or (parts[1] != 0).any()) for parts in pair.contributions.values()):
        return list(pair.contributions)
    return names


def matches(pair: PairAlignment, side: int, top: int = 3) -> list[list[tuple[int, float]]]:
    """For each unit on ``side``, its partners on the other side: ``(index, value)`` pairs.

    Greedy: the most similar matchable unit and its similarity. Optimal transport: the units it
    sends mass to (reference side) or receives mass from (candidate side), largest flow first,
    at most ``top`` of them, with the flow.
    """
    m = pair.matrix if side == 0 else pair.matrix.T
    if "transport" in pair.flows:
        plan = pair.flows["transport"] if side == 0 else pair.flows["transport"].T
        out = []
        for row in plan:
            vals, idx = torch.sort(row, descending=True)
            keep = vals > max(float(vals[0]) if len(vals) else 0.0, 0.0) * 1e-3
            out.append([(int(i), float(v)) for i, v in zip(idx[keep][:top], vals[keep][:top]) if v > 0])
        return out
    out = []
    filled = torch.nan_to_num(m, nan=float("-inf"))
    for row, full in zip(filled, m):
        if len(row) == 0 or not bool(torch.isfinite(row).any()):
            out.append([])
            continue
        j = int(row.argmax())
        out.append([(j, float(full[j]))])
    return out


def marks(pair: PairAlignment) -> list[list[bool]]:
    """Which matrix cells carry a match (greedy, either direction) or a transport flow of at
    least 1/1000 of the largest flow (an entropic plan is nowhere exactly 0)."""
    on = torch.zeros_like(pair.matrix, dtype=torch.bool)
    for name, f in pair.flows.items():
        if name == "transport":
            peak = float(f.max()) if f.numel() else 0.0
            on |= (f > peak * 1e-3) if peak > 0 else torch.zeros_like(on)
        else:
            on |= f != 0
    return on.tolist()


def fmt_scores(scores: dict[str, float], digits: int = 4) -> str:
    return "  ".join(f"{k}={v:.{digits}f}" for k, v in scores.items())


def short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
