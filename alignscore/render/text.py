"""The explanation as plain-text tables."""

from __future__ import annotations

import math

from ..explain import Explanation, PairAlignment
from .rows import fmt_scores, marks, unit_rows


def text_report(expl: Explanation, digits: int = 3, matrix: bool = True, width: int = 9) -> str:
    """The explanation as plain-text tables: scores, one table per side (unit, mass, matches or
    flows, contribution to each metric) and the similarity or cost matrix."""
    lines = [f"signature: {expl.signature}", f"candidate: {expl.candidate}",
             f"scores: {fmt_scores(expl.scores)}"]
    for k, pair in enumerate(expl.pairs):
        best = " (best)" if len(expl.pairs) > 1 and k == expl.best_reference else ""
        lines += ["", f"reference [{k}]{best}: {pair.reference}", f"pair scores: {fmt_scores(pair.scores)}"]
        if pair.raw_scores != pair.scores:
            lines.append(f"before rescaling: {fmt_scores(pair.raw_scores)}")
        lines += _side_table(pair, 0, digits) + _side_table(pair, 1, digits)
        if matrix:
            lines += _matrix_table(pair, digits, width if pair.ref_units is None else width + 6)
    return "\n".join(lines) + "\n"


def _side_table(pair: PairAlignment, side: int, digits: int) -> list[str]:
    metrics, units = unit_rows(pair, side)
    ot = "transport" in pair.flows
    head = ("sends mass to (flow)" if side == 0 else "receives mass from (flow)") if ot else "best match (similarity)"
    rows = [[str(u.index), u.label, f"{u.mass:.{digits}f}", u.partner_text(digits)]
            + [f"{c:+.{digits + 1}f}" for c in u.contributions] for u in units]
    header = ["#", "reference unit" if side == 0 else "candidate unit", "mass", head] + metrics
    widths = [max(len(r[c]) for r in rows + [header]) for c in range(len(header))]
    fmt = lambda r: "  " + "  ".join(c.ljust(w) if n in (1, 3) else c.rjust(w)  # noqa: E731
                                     for n, (c, w) in enumerate(zip(r, widths))).rstrip()
    title = "  reference" if side == 0 else "  candidate"
    return ["", f"{title}: mass, {'flows' if ot else 'matches'} and contribution to each score", fmt(header)] + [
        fmt(r) for r in rows]


def _matrix_table(pair: PairAlignment, digits: int, width: int) -> list[str]:
    kind = pair.kind
    cut = lambda s: s if len(s) <= width else s[: width - 1] + "~"  # noqa: E731
    rows_l = [cut(s) for s in pair.ref_labels]
    cols_l = [cut(s) for s in pair.cand_labels]
    lw = max([len(s) for s in rows_l] + [4])
    cw = max([len(s) for s in cols_l] + [digits + 3])
    out = ["", f"  {kind} matrix (rows: reference, columns: candidate; * = "
               f"{'transport flow >= 1/1000 of the largest' if 'transport' in pair.flows else 'greedy match'}; "
               f". = cannot match)",
           "  " + " " * lw + " " + " ".join(c.rjust(cw) for c in cols_l)]
    marked = marks(pair)
    for i, label in enumerate(rows_l):
        cells = []
        for j in range(len(cols_l)):
            v = float(pair.matrix[i, j])
            cell = "." if math.isnan(v) else f"{v:.{digits}f}" + ("*" if marked[i][j] else " ")
            cells.append(cell.rjust(cw + 1))
        out.append("  " + label.ljust(lw) + " " + "".join(cells))
    return out
