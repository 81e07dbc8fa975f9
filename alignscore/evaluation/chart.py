"""Charts of meta-evaluation results (PNG through matplotlib's ``Figure``, no pyplot: no global
backend state): per item, each language pair's |r| as a faint dot and one line per series
through the items' averages."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

# a value per language pair, None where there is none
Values = Sequence[float | None]


def dot_line_chart(path: str | Path, items: Sequence[str], series: Mapping[str, Sequence[Values]], title: str,
                   ylabel: str, lines: Mapping[str, float] = {}) -> None:
    """Write a PNG: for series ``s`` and item ``i``, ``series[s][i]`` (one value per language
    pair) drawn as dots at ``i`` and their average joined by a line across the items (broken
    where a value is missing); items with no value at all are marked "skipped"; ``lines`` adds
    labelled horizontal lines (e.g. an estimate to compare with)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(min(14.0, 3.0 + 0.9 * len(items)), 4.8))
    ax = fig.subplots()
    shift = 0.08
    ran = set()
    for j, (name, rows) in enumerate(series.items()):
        colour = f"C{j % 10}"
        xs, avgs = [], []
        for i, row in enumerate(rows):
            vals = [v for v in row if v is not None and np.isfinite(v)]
            x = i + (j - (len(series) - 1) / 2) * shift
            if vals:
                ran.add(i)
                ax.scatter([x] * len(vals), vals, s=10, color=colour, alpha=0.35, linewidths=0)
            xs.append(x)  # NaN where a language pair is missing: the line breaks there
            avgs.append(float(np.mean(vals)) if vals and len(vals) == len(row) else float("nan"))
        ax.plot(xs, avgs, marker="o", color=colour, label=f"{name} (average)", linewidth=1.4)
    for k, (name, value) in enumerate(lines.items()):
        ax.axhline(value, color=f"C{(len(series) + k) % 10}", linestyle="--", linewidth=1.0, label=name)
    for i in range(len(items)):
        if i not in ran:
            ax.annotate("skipped", (i, 0.5), xycoords=("data", "axes fraction"), ha="center", va="center",
                        rotation=90, fontsize=8, color="gray")
    ax.set_xticks(range(len(items)))
    ax.set_xticklabels(items, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(items) - 0.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


__all__ = ["dot_line_chart"]
