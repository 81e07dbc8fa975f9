"""The explanation as a self-contained HTML page."""

from __future__ import annotations

import html
import math

import torch

from ..explain import Explanation, PairAlignment
from .rows import fmt_scores, marks, short, unit_rows


def html_report(expl: Explanation, digits: int = 3) -> str:
    """A self-contained HTML page: the scores and signature, and per reference a coloured table
    of the matrix (tokens as text, matched cells outlined, transport flows written in the cells)
    with each unit's mass and contributions."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>alignscore: {e(short(expl.candidate, 60))}</title>",
        "<style>body{font-family:sans-serif;margin:1.5em;color:#222}"
        "table.m{border-collapse:collapse;font-size:13px;margin:.6em 0}"
        "table.m td,table.m th{border:1px solid #ddd;padding:3px 6px;text-align:right}"
        "table.m th{background:#f6f6f6;font-weight:normal}"
        "td.hit{outline:2px solid #d62728;outline-offset:-2px;font-weight:bold}"
        ".nomass{color:#999}.sig{font-family:monospace;font-size:11px;color:#555;word-break:break-all}"
        "td.na{background:#eee;color:#aaa}</style></head><body>",
        f"<h1>{e(fmt_scores(expl.scores, digits + 1))}</h1>",
        f'<p class="sig">{e(str(expl.signature))}</p>',
        f"<p><b>candidate:</b> {e(expl.candidate)}</p>",
    ]
    for k, pair in enumerate(expl.pairs):
        best = " (best)" if len(expl.pairs) > 1 and k == expl.best_reference else ""
        parts.append(f"<h2>reference [{k}]{best}: {e(pair.reference)}</h2>")
        parts.append(f"<p>pair scores: {e(fmt_scores(pair.scores, digits + 1))}</p>")
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
    marked = marks(pair)
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
            if plan is not None and marked[i][j]:
                text += f" → {float(plan[i, j]):.{digits}f}"
            cls = ' class="hit"' if marked[i][j] else ""
            colour = "#fff" if t > 0.6 else "#222"
            cells.append(f'<td{cls} style="background:{_colour(t)};color:{colour}">{e(text)}</td>')
        rows.append(f'<tr><th class="{"nomass" if w <= 0 else ""}">{e(lab)}</th><th>{w:.{digits}f}</th>'
                    + "".join(cells) + "</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _html_side(pair: PairAlignment, side: int, digits: int) -> str:
    e = html.escape
    metrics, units = unit_rows(pair, side)
    name = "reference" if side == 0 else "candidate"
    head = "flows" if "transport" in pair.flows else "best match"
    out = [f'<table class="m"><caption>{name} units: contribution to each score</caption>',
           f"<tr><th>#</th><th>{name} unit</th><th>mass</th><th>{head}</th>"
           + "".join(f"<th>{e(m)}</th>" for m in metrics) + "</tr>"]
    for u in units:
        out.append(f"<tr><td>{u.index}</td><td>{e(u.label)}</td><td>{u.mass:.{digits}f}</td>"
                   f"<td>{e(u.partner_text(digits))}</td>"
                   + "".join(f"<td>{c:+.{digits + 1}f}</td>" for c in u.contributions) + "</tr>")
    out.append("</table>")
    return "\n".join(out)
