"""The explanation as a figure (PNG/SVG, matplotlib). matplotlib is imported only when a figure
is drawn, and only its bare ``Figure`` (rendered by the Agg canvas): never pyplot, so no GUI
backend and no global figure state."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import torch

from ..errors import ConfigError
from ..explain import Explanation, PairAlignment
from ..textio import require_folder
from .rows import fmt_scores, short


def figure(pair: PairAlignment, title: str, signature: str = "") -> Any:
    """A matplotlib figure: the similarity (or cost) heatmap, reference units down the side and
    candidate units along the top, with the greedy matches (solid outline: each reference unit's
    best candidate unit, for recall; dashed inner outline: each candidate unit's best reference
    unit, for precision) or the transport plan (a disc per flow, its area proportional to the
    flow) drawn on it; the units' normalised masses as bars beside the axes; ``title`` above and
    the signature below. Units without mass (special or filtered tokens) have grey labels."""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global figure state
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    m = pair.matrix.double().numpy()
    n_r, n_c = m.shape
    cell = max(0.16, min(0.5, 16.0 / max(n_r, n_c, 1)))  # inches: long texts get smaller cells
    tick = 9 if cell >= 0.3 else 6
    label_w = 0.075 * _longest(pair.ref_labels)
    label_h = 0.06 * _longest(pair.cand_labels)
    fig = Figure(figsize=(1.6 + label_w + cell * max(n_c, 4) + 1.3, 2.3 + label_h + cell * max(n_r, 2) + 1.1),
                 dpi=100, layout="constrained")
    grid = fig.add_gridspec(4, 2, width_ratios=[cell * max(n_c, 1), 1.1],  # in inches
                            height_ratios=[0.3, 0.8, cell * max(n_r, 1), 0.5])
    header = fig.add_subplot(grid[0, :])
    ax = fig.add_subplot(grid[2, 0])
    top = fig.add_subplot(grid[1, 0], sharex=ax)
    side = fig.add_subplot(grid[2, 1], sharey=ax)
    footer = fig.add_subplot(grid[3, :])
    header.axis("off")
    footer.axis("off")

    similarity = pair.kind == "similarity"
    cmap = matplotlib.colormaps["Blues" if similarity else "Blues_r"].with_extremes(bad="#e6e6e6")
    finite = pair.matrix[torch.isfinite(pair.matrix)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    ax.imshow(m, cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1, aspect="auto", interpolation="nearest")
    if n_r * n_c <= 400:
        for i in range(n_r):
            for j in range(n_c):
                if math.isfinite(m[i, j]):
                    dark = (m[i, j] - lo) / ((hi - lo) or 1.0)
                    dark = dark if similarity else 1 - dark
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=7, zorder=4,
                            color="white" if dark > 0.6 else "#333333")
    handles: list[Any] = []
    if "transport" in pair.flows:
        plan = pair.flows["transport"].double()
        peak = float(plan.max()) if plan.numel() else 0.0
        if peak > 0:
            ii, jj = (plan > peak * 1e-3).nonzero(as_tuple=True)
            area = (plan[ii, jj] / peak * (72 * cell * 0.95) ** 2).tolist()
            ax.scatter(jj.tolist(), ii.tolist(), s=area, facecolors="#ff7f0e55", edgecolors="#d62728",
                       linewidths=1.2, zorder=3)
            handles.append(Line2D([], [], marker="o", ls="", markerfacecolor="#ff7f0e55", markeredgecolor="#d62728",
                                  label=f"transport flow (disc area ∝ mass moved; largest {peak:.3f})"))
    else:
        styles = {"recall": (0.04, "#d62728", "-", "best candidate unit of each reference unit (recall)"),
                  "precision": (0.16, "#ff7f0e", "--", "best reference unit of each candidate unit (precision)")}
        for name, (inset, colour, ls, what) in styles.items():
            flow = pair.flows.get(name)
            if flow is None:
                continue
            for i, j in (flow != 0).nonzero().tolist():
                ax.add_patch(Rectangle((j - 0.5 + inset, i - 0.5 + inset), 1 - 2 * inset, 1 - 2 * inset,
                                       fill=False, edgecolor=colour, linestyle=ls, linewidth=1.8, zorder=3))
            handles.append(Patch(fill=False, edgecolor=colour, linestyle=ls, linewidth=1.8, label=what))
    ax.set_xticks(range(n_c))
    ax.set_xticklabels(pair.cand_labels, rotation=45, ha="right", rotation_mode="anchor", fontsize=tick)
    ax.set_yticks(range(n_r))
    ax.set_yticklabels(pair.ref_labels, fontsize=tick)
    ax.set_xlabel("candidate: " + short(pair.candidate), fontsize=9)
    ax.set_ylabel("reference: " + short(pair.reference), fontsize=9)
    _grey_unmatchable(ax, pair)

    _mass_bars(top, pair.cand_mass, cell >= 0.3, across=True)
    _mass_bars(side, pair.ref_mass, cell >= 0.3, across=False)
    for a in (top, side):
        for s in ("top", "right"):
            a.spines[s].set_visible(False)
    width_chars = int(fig.get_figwidth() * 14)
    fig.suptitle("\n".join(textwrap.wrap(title, width_chars)), fontsize=10)
    if handles:
        footer.legend(handles=handles, loc="upper center", fontsize=7, frameon=False, ncols=1)
    if signature:
        header.text(0.5, 1.0, "\n".join(wrap_signature(signature, int(width_chars * 1.7))), fontsize=5.5,
                    color="#555555", ha="center", va="top", transform=header.transAxes)
    return fig


def wrap_signature(signature: object, width: int) -> list[str]:
    """Lines of at most about ``width`` characters, broken only between the signature's
    ``|``-separated fields."""
    lines: list[str] = []
    for part in str(signature).split("|"):
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += "|" + part
        else:
            lines.append(part if not lines else "|" + part)
    return lines


def _longest(labels: list[str]) -> int:
    return min(max((len(s) for s in labels), default=1), 20)


def _grey_unmatchable(ax: Any, pair: PairAlignment) -> None:
    """Grey tick labels for units that carry no mass (special or filtered tokens)."""
    for lab, w in zip(ax.get_xticklabels(), pair.cand_mass.tolist()):
        if w <= 0:
            lab.set_color("#999999")
    for lab, w in zip(ax.get_yticklabels(), pair.ref_mass.tolist()):
        if w <= 0:
            lab.set_color("#999999")


def _mass_bars(ax: Any, mass: torch.Tensor, labelled: bool, across: bool) -> None:
    """One side's unit masses as bars: ``across`` the candidate's above the matrix, else the
    reference's beside it (horizontal); each bar labelled with its mass where cells are large."""
    n = len(mass)
    top = max(float(mass.max()) if n else 0.0, 1e-9)
    if across:
        ax.bar(range(n), mass.double().numpy(), color="#6b8fb5", width=0.7)
        ax.set_ylabel("mass", fontsize=8)
        ax.tick_params(labelbottom=False, labelsize=7)
        ax.set_ylim(0, top * 1.35)
    else:
        ax.barh(range(n), mass.double().numpy(), color="#6b8fb5", height=0.7)
        ax.set_xlabel("mass", fontsize=8)
        ax.tick_params(labelleft=False, labelsize=7)
        ax.set_xlim(0, top * 1.6)
    for k, v in enumerate(mass.tolist() if labelled else []):
        if across:
            ax.text(k, v, f"{v:.2f}", ha="center", va="bottom", fontsize=6)
        else:
            ax.text(v, k, f" {v:.2f}", ha="left", va="center", fontsize=6)


def pair_title(expl: Explanation, pair: PairAlignment) -> str:
    """Scores of the pair (and of the candidate, when it has several references)."""
    title = fmt_scores(pair.scores, 3).replace("=", " ")
    if len(expl.pairs) > 1:
        k = expl.pairs.index(pair)
        best = ", the best" if k == expl.best_reference else ""
        title += f"   (reference [{k}] of {len(expl.pairs)}{best})"
    return title


def save_figure(expl: Explanation, path: str | Path, ref_index: int | None = None, fmt: str | None = None) -> Path:
    """Draw one pair of ``expl`` (the best reference unless ``ref_index``) into ``path``;
    the format (png or svg) comes from ``fmt`` or the suffix. SVG keeps text as text."""
    import matplotlib

    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt not in ("png", "svg"):
        raise ConfigError(f"a figure is PNG or SVG, not {fmt!r}")
    pair = _pick(expl, ref_index)
    with matplotlib.rc_context({"svg.fonttype": "none", "font.family": "DejaVu Sans"}):
        fig = figure(pair, pair_title(expl, pair), expl.signature)
        require_folder(path)  # no output creates a folder (alignscore.textio)
        fig.savefig(path, format=fmt)
    return path


def _pick(expl: Explanation, ref_index: int | None) -> PairAlignment:
    if ref_index is None:
        return expl.best
    if not 0 <= ref_index < len(expl.pairs):
        raise ConfigError(f"reference index {ref_index} out of range: the candidate has "
                          f"{len(expl.pairs)} reference(s), indexed from 0")
    return expl.pairs[ref_index]
