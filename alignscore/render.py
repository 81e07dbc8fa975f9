"""Render explained alignments: a text table, a figure (PNG/SVG, matplotlib) or a self-contained HTML page.

Rendering loops over tokens freely (it formats, it does not compute scores). matplotlib is
imported only when a figure is drawn, and only its bare ``Figure`` (rendered by the Agg canvas):
never pyplot, so no GUI backend and no global figure state.
"""

from __future__ import annotations

import html
import math
import textwrap
from pathlib import Path
from typing import Any

import torch

from .errors import ConfigError
from .explain import Explanation, PairAlignment

FORMATS = ("text", "png", "svg", "html")


# -- what to say about each unit ---------------------------------------------------------------------
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


def _fmt_scores(scores: dict[str, float], digits: int = 4) -> str:
    return "  ".join(f"{k}={v:.{digits}f}" for k, v in scores.items())


# -- text ----------------------------------------------------------------------------------------------
def text_report(expl: Explanation, digits: int = 3, matrix: bool = True, width: int = 9) -> str:
    """The explanation as plain-text tables: scores, one table per side (unit, mass, matches or
    flows, contribution to each metric) and the similarity or cost matrix."""
    lines = [f"signature: {expl.signature}", f"candidate: {expl.candidate}",
             f"scores: {_fmt_scores(expl.scores)}"]
    for k, pair in enumerate(expl.pairs):
        best = " (best)" if len(expl.pairs) > 1 and k == expl.best_reference else ""
        lines += ["", f"reference [{k}]{best}: {pair.reference}", f"pair scores: {_fmt_scores(pair.scores)}"]
        if pair.raw_scores != pair.scores:
            lines.append(f"before rescaling: {_fmt_scores(pair.raw_scores)}")
        lines += _side_table(pair, 0, digits) + _side_table(pair, 1, digits)
        if matrix:
            lines += _matrix_table(pair, digits, width if pair.ref_units is None else width + 6)
    return "\n".join(lines) + "\n"


def _side_table(pair: PairAlignment, side: int, digits: int) -> list[str]:
    labels = pair.ref_labels if side == 0 else pair.cand_labels
    other = pair.cand_labels if side == 0 else pair.ref_labels
    mass = pair.ref_mass if side == 0 else pair.cand_mass
    metrics = side_metrics(pair, side)
    ot = "transport" in pair.flows
    head = ("sends mass to (flow)" if side == 0 else "receives mass from (flow)") if ot else "best match (similarity)"
    rows = []
    for i, (label, partners) in enumerate(zip(labels, matches(pair, side))):
        match = ", ".join(f"{other[j]} ({v:.{digits}f})" for j, v in partners) or "-"
        contrib = [f"{float(pair.contributions[m][side][i]):+.{digits + 1}f}" for m in metrics]
        rows.append([str(i), label, f"{float(mass[i]):.{digits}f}", match] + contrib)
    header = ["#", "reference unit" if side == 0 else "candidate unit", "mass", head] + metrics
    widths = [max(len(r[c]) for r in rows + [header]) for c in range(len(header))]
    fmt = lambda r: "  " + "  ".join(c.ljust(w) if n in (1, 3) else c.rjust(w)  # noqa: E731
                                     for n, (c, w) in enumerate(zip(r, widths))).rstrip()
    title = "  reference" if side == 0 else "  candidate"
    return ["", f"{title}: mass, {'flows' if ot else 'matches'} and contribution to each score", fmt(header)] + [
        fmt(r) for r in rows]


def _matrix_table(pair: PairAlignment, digits: int, width: int) -> list[str]:
    kind = "similarity" if pair.kind == "similarity" else "cost"
    cut = lambda s: s if len(s) <= width else s[: width - 1] + "~"  # noqa: E731
    rows_l = [cut(s) for s in pair.ref_labels]
    cols_l = [cut(s) for s in pair.cand_labels]
    lw = max([len(s) for s in rows_l] + [4])
    cw = max([len(s) for s in cols_l] + [digits + 3])
    out = ["", f"  {kind} matrix (rows: reference, columns: candidate; * = "
               f"{'transport flow >= 1/1000 of the largest' if 'transport' in pair.flows else 'greedy match'}; "
               f". = cannot match)",
           "  " + " " * lw + " " + " ".join(c.rjust(cw) for c in cols_l)]
    marked = _marks(pair)
    for i, label in enumerate(rows_l):
        cells = []
        for j in range(len(cols_l)):
            v = float(pair.matrix[i, j])
            cell = "." if math.isnan(v) else f"{v:.{digits}f}" + ("*" if marked[i][j] else " ")
            cells.append(cell.rjust(cw + 1))
        out.append("  " + label.ljust(lw) + " " + "".join(cells))
    return out


def _marks(pair: PairAlignment) -> list[list[bool]]:
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


# -- figures -------------------------------------------------------------------------------------------
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
    ax.set_xlabel("candidate: " + _short(pair.candidate), fontsize=9)
    ax.set_ylabel("reference: " + _short(pair.reference), fontsize=9)
    _grey_unmatchable(ax, pair)

    top.bar(range(n_c), pair.cand_mass.double().numpy(), color="#6b8fb5", width=0.7)
    top.set_ylabel("mass", fontsize=8)
    top.tick_params(labelbottom=False, labelsize=7)
    for j, v in enumerate(pair.cand_mass.tolist() if cell >= 0.3 else []):
        top.text(j, v, f"{v:.2f}", ha="center", va="bottom", fontsize=6)
    top.set_ylim(0, max(float(pair.cand_mass.max()) if n_c else 0.0, 1e-9) * 1.35)
    side.barh(range(n_r), pair.ref_mass.double().numpy(), color="#6b8fb5", height=0.7)
    side.set_xlabel("mass", fontsize=8)
    side.tick_params(labelleft=False, labelsize=7)
    for i, v in enumerate(pair.ref_mass.tolist() if cell >= 0.3 else []):
        side.text(v, i, f" {v:.2f}", ha="left", va="center", fontsize=6)
    side.set_xlim(0, max(float(pair.ref_mass.max()) if n_r else 0.0, 1e-9) * 1.6)
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


def wrap_signature(signature: str, width: int) -> list[str]:
    """Lines of at most about ``width`` characters, broken only between the signature's
    ``|``-separated fields."""
    lines: list[str] = []
    for part in signature.split("|"):
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += "|" + part
        else:
            lines.append(part if not lines else "|" + part)
    return lines


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


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


def pair_title(expl: Explanation, pair: PairAlignment) -> str:
    """Scores of the pair (and of the candidate, when it has several references)."""
    title = _fmt_scores(pair.scores, 3).replace("=", " ")
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
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format=fmt)
    return path


def _pick(expl: Explanation, ref_index: int | None) -> PairAlignment:
    if ref_index is None:
        return expl.best
    if not 0 <= ref_index < len(expl.pairs):
        raise ConfigError(f"reference index {ref_index} out of range: the candidate has "
                          f"{len(expl.pairs)} reference(s), indexed from 0")
    return expl.pairs[ref_index]


# -- HTML ------------------------------------------------------------------------------------------------
def html_report(expl: Explanation, digits: int = 3) -> str:
    """A self-contained HTML page: the scores and signature, and per reference a coloured table
    of the matrix (tokens as text, matched cells outlined, transport flows written in the cells)
    with each unit's mass and contributions."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>alignscore: {e(_short(expl.candidate, 60))}</title>",
        "<style>body{font-family:sans-serif;margin:1.5em;color:#222}"
        "table.m{border-collapse:collapse;font-size:13px;margin:.6em 0}"
        "table.m td,table.m th{border:1px solid #ddd;padding:3px 6px;text-align:right}"
        "table.m th{background:#f6f6f6;font-weight:normal}"
        "td.hit{outline:2px solid #d62728;outline-offset:-2px;font-weight:bold}"
        ".nomass{color:#999}.sig{font-family:monospace;font-size:11px;color:#555;word-break:break-all}"
        "td.na{background:#eee;color:#aaa}</style></head><body>",
        f"<h1>{e(_fmt_scores(expl.scores, digits + 1))}</h1>",
        f'<p class="sig">{e(expl.signature)}</p>',
        f"<p><b>candidate:</b> {e(expl.candidate)}</p>",
    ]
    for k, pair in enumerate(expl.pairs):
        best = " (best)" if len(expl.pairs) > 1 and k == expl.best_reference else ""
        parts.append(f"<h2>reference [{k}]{best}: {e(pair.reference)}</h2>")
        parts.append(f"<p>pair scores: {e(_fmt_scores(pair.scores, digits + 1))}</p>")
        parts.append(_html_matrix(pair, digits))
        for side in (0, 1):
            parts.append(_html_side(pair, side, digits))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _colour(t: float) -> str:
    """White (t = 0) to dark blue (t = 1)."""
    t = min(max(t, 0.0), 1.0)
    lo, hi = (255, 255, 255), (8, 69, 148)
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(lo, hi))


def _html_matrix(pair: PairAlignment, digits: int) -> str:
    e = html.escape
    similarity = pair.kind == "similarity"
    finite = pair.matrix[torch.isfinite(pair.matrix)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    plan = pair.flows.get("transport")
    marks = _marks(pair)
    caption = ("cosine similarity; outlined: greedy matches (each reference unit's best candidate unit and "
               "each candidate unit's best reference unit)" if similarity else
               "transport cost; outlined: cells the plan moves mass through, at least 1/1000 of its largest "
               "flow (flow after the arrow)")
    rows = [f'<table class="m"><caption>{e(caption)}</caption>',
            "<tr><th>reference \\ candidate</th><th>mass</th>"
            + "".join(f'<th class="{"nomass" if w <= 0 else ""}">{e(lab)}</th>'
                      for lab, w in zip(pair.cand_labels, pair.cand_mass.tolist())) + "</tr>",
            "<tr><th>mass</th><th></th>" + "".join(f"<th>{w:.{digits}f}</th>" for w in pair.cand_mass.tolist())
            + "</tr>"]
    for i, (lab, w) in enumerate(zip(pair.ref_labels, pair.ref_mass.tolist())):
        cells = []
        for j in range(len(pair.cand_labels)):
            v = float(pair.matrix[i, j])
            if math.isnan(v):
                cells.append('<td class="na">·</td>')
                continue
            t = (v - lo) / ((hi - lo) or 1.0)
            t = t if similarity else 1 - t
            text = f"{v:.{digits}f}"
            if plan is not None and marks[i][j]:
                text += f" → {float(plan[i, j]):.{digits}f}"
            cls = ' class="hit"' if marks[i][j] else ""
            colour = "#fff" if t > 0.6 else "#222"
            cells.append(f'<td{cls} style="background:{_colour(t)};color:{colour}">{e(text)}</td>')
        rows.append(f'<tr><th class="{"nomass" if w <= 0 else ""}">{e(lab)}</th><th>{w:.{digits}f}</th>'
                    + "".join(cells) + "</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _html_side(pair: PairAlignment, side: int, digits: int) -> str:
    e = html.escape
    labels = pair.ref_labels if side == 0 else pair.cand_labels
    other = pair.cand_labels if side == 0 else pair.ref_labels
    mass = pair.ref_mass if side == 0 else pair.cand_mass
    metrics = side_metrics(pair, side)
    name = "reference" if side == 0 else "candidate"
    head = "flows" if "transport" in pair.flows else "best match"
    out = [f'<table class="m"><caption>{name} units: contribution to each score</caption>',
           f"<tr><th>#</th><th>{name} unit</th><th>mass</th><th>{head}</th>"
           + "".join(f"<th>{e(m)}</th>" for m in metrics) + "</tr>"]
    for i, (lab, partners) in enumerate(zip(labels, matches(pair, side))):
        match = ", ".join(f"{other[j]} ({v:.{digits}f})" for j, v in partners) or "-"
        out.append(f"<tr><td>{i}</td><td>{e(lab)}</td><td>{float(mass[i]):.{digits}f}</td><td>{e(match)}</td>"
                   + "".join(f"<td>{float(pair.contributions[m][side][i]):+.{digits + 1}f}</td>" for m in metrics)
                   + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def write(expl: Explanation, path: str | Path | None, fmt: str, ref_index: int | None = None) -> str | None:
    """Write ``expl`` as ``fmt`` (text, png, svg, html) to ``path``; text and html without a
    path are returned instead."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if fmt in ("png", "svg"):
        if path is None:
            raise ConfigError(f"{fmt} output needs a file (-o FILE.{fmt})")
        save_figure(expl, path, ref_index, fmt)
        return None
    text = text_report(expl) if fmt == "text" else html_report(expl)
    if path is None:
        return text
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
    return None


def format_for(path: str | Path | None, fmt: str | None) -> str:
    """The output format: ``fmt`` when given, else from the file's suffix, else text."""
    if fmt:
        return fmt
    if path is None:
        return "text"
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix == "txt":
        return "text"
    if suffix in ("htm",):
        return "html"
    if suffix not in FORMATS:
        raise ConfigError(f"cannot tell the format of {path} from its suffix: use .png, .svg, .html "
                          "or .txt, or give --format")
    return suffix
