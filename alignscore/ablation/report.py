"""Meta-evaluating a grid run and writing its outputs: a Markdown table in the layout of BERTScore
Table 9, a long-form CSV, a chart (PNG) and every cell's signature."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from ..evaluation.chart import dot_line_chart
from ..evaluation.stats import (CORRELATIONS, abs_pearson, bootstrap_ci, bootstrap_indices, correlation, flat,
                                flat_text, not_beaten)
from ..textio import write_output_set
from .runner import GridRun


@dataclass
class CellStat:
    """The meta-evaluation of one cell on one language pair with one correlation."""

    row: str
    column: str
    lang_pair: str
    method: str
    row_index: int = 0
    column_index: int = 0
    r: float | None = None
    p_value: float | None = None
    n: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    not_beaten: bool | None = None
    skipped: str | None = None
    undefined: str | None = None  # why r is undefined although the cell ran


def evaluate(run: GridRun, methods: Sequence[str] = ("pearson",), alpha: float = 0.05, bootstrap: int = 1000,
             confidence: float = 0.95, seed: int = 0) -> list[CellStat]:
    """Correlate every cell with the human scores, per language pair.

    For Pearson, cells that no other cell of the same language pair significantly beats
    (Williams' test, one-sided, level ``alpha``) get ``not_beaten=True``, and, with
    ``bootstrap > 0``, a percentile interval of ``|r|`` from ``bootstrap`` resamples of the
    segments (seeded, the same resamples for every cell of a language pair).
    """
    for m in methods:
        if m not in CORRELATIONS:
            raise ConfigError(f"unknown correlation {m!r}; choose from {', '.join(CORRELATIONS)}")
    out: list[CellStat] = []
    for k, lp in enumerate(run.lang_pairs):
        cells = [c for c in run.cells if c.lang_pair == lp.name]
        scored = [c for c in cells if c.scores is not None]
        human = lp.human
        best: dict[int, bool] = {}
        if scored and "pearson" in methods:
            flags = not_beaten(np.stack([c.scores for c in scored]), human, alpha)
            best = {id(c): bool(f) for c, f in zip(scored, flags)}
        indices = bootstrap_indices(len(human), bootstrap, seed + k) if bootstrap > 0 else None
        for method in methods:
            for c in cells:
                stat = CellStat(run.row_names[c.row], run.grid.columns[c.column].name, lp.name, method,
                                c.row, c.column, n=len(human), skipped=c.skipped)
                if c.scores is not None:
                    r, p = correlation(c.scores, human, method)
                    if math.isnan(r):
                        stat.undefined = _why_undefined(c.scores, human)
                        out.append(stat)
                        continue
                    stat.r, stat.p_value = r, p if math.isfinite(p) else None
                    if method == "pearson":
                        stat.not_beaten = best.get(id(c))
                        if indices is not None:
                            ci = bootstrap_ci(abs_pearson, c.scores, human, confidence=confidence,
                                              indices=indices)
                            if math.isfinite(ci.low) and math.isfinite(ci.high):
                                stat.ci_low, stat.ci_high = ci.low, ci.high
                out.append(stat)
    return out


def _why_undefined(scores: np.ndarray, human: np.ndarray) -> str:
    if flat(human):
        return f"the human scores are {flat_text(human)}: the correlation is undefined"
    if flat(scores):
        return f"the cell's scores are {flat_text(scores)}: the correlation is undefined"
    return "the correlation is undefined"


def markdown(run: GridRun, stats: list[CellStat], method: str = "pearson", alpha: float = 0.05,
             command: str | None = None) -> str:
    """The Table 9 layout: one block of lines per row (one line per column), language pairs across,
    then the average of the absolute correlations. Skipped cells say why in a note."""
    lps = [lp.name for lp in run.lang_pairs]
    cols = [c.name for c in run.grid.columns]
    by_key = {(s.row_index, s.column_index, s.lang_pair): s for s in stats if s.method == method}
    notes: dict[str, int] = {}

    def note(reason: str) -> str:
        notes.setdefault(reason, len(notes) + 1)
        return f"[{notes[reason]}]"

    label = {"pearson": "Pearson r", "spearman": "Spearman rho", "kendall": "Kendall tau"}[method]
    n = sorted({len(lp) for lp in run.lang_pairs})
    lines = [f"## {run.grid.title}", ""]
    desc = (f"Absolute {label} with the human DA scores, segment level "
            f"(n = {', '.join(map(str, n))} per language pair); Avg: mean over the language pairs.")
    if method == "pearson":
        desc += (f" **Bold**: not significantly outperformed by any other cell of its language pair "
                 f"(Williams test, one-sided, p < {alpha:g}).")
    lines += [desc, ""]
    lines.append("| Ablation | Metric | " + " | ".join(lps) + " | Avg |")
    lines.append("|---|---|" + "---:|" * (len(lps) + 1))
    for i, row in enumerate(run.row_names):
        row_stats = [[by_key.get((i, j, lp)) for lp in lps] for j in range(len(cols))]
        reasons = {s.skipped for cs in row_stats for s in cs if s is not None and s.skipped}
        if all(s is None or s.skipped for cs in row_stats for s in cs) and len(reasons) == 1:
            mark = note(reasons.pop())
            lines.append(f"| {row} | (all) | " + " | ".join(["—"] * len(lps)) + f" | skipped {mark} |")
            continue
        for j, col in enumerate(cols):
            cells = []
            values = []
            for s in row_stats[j]:
                if s is not None and s.undefined:
                    cells.append("undefined " + note(s.undefined))
                    continue
                if s is None or s.r is None:
                    cells.append("—" + (" " + note(s.skipped) if s is not None and s.skipped else ""))
                    continue
                v = abs(s.r)
                values.append(v)
                text = f"{v:.3f}"
                cells.append(f"**{text}**" if s.not_beaten else text)
            avg = f"{np.mean(values):.3f}" if len(values) == len(lps) and values else "—"
            lines.append(f"| {row if j == 0 else ''} | {col} | " + " | ".join(cells) + f" | {avg} |")
    lines.append("")
    if notes:
        for reason, k in notes.items():
            lines.append(f"[{k}] {reason}  ")
        lines.append("")
    lines += _describe(run, command)
    return "\n".join(lines) + "\n"


def _describe(run: GridRun, command: str | None) -> list[str]:
    out = []
    if command:
        out += ["Command:", "", "```", command, "```", ""]
    roles = ", ".join(f"{k} = {v}" for k, v in run.models.items())
    out.append(f"Models: {roles}.  ")
    corp = []
    for lp in run.lang_pairs:
        if lp.idf_corpus is not None:
            name = lp.idf_corpus_path.name if lp.idf_corpus_path else "corpus"
            corp.append(f"{lp.name}: {name} ({len([t for t in lp.idf_corpus if t.strip()])} sentences)")
    if run.idf_l:
        out.append("idf-L corpora: " + ("; ".join(corp) if corp else "none") + ".  ")
    empties = sum(c.empty for c in run.cells if c.scores is not None)
    if empties:
        out.append(f"Pairs with an empty side (scored 0), summed over cells: {empties}.  ")
    timing = ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items())
    out.append(f"Time: {timing}.  ")
    out.append("Every cell's signature: signatures.tsv; every number: results.csv.")
    return out


def write_csv(path: str | Path, stats: list[CellStat]) -> None:
    """Long form: one line per (row, aligner column, language pair, correlation)."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "aligner", "lang_pair", "correlation", "r", "p_value", "n", "ci_low", "ci_high",
                    "not_beaten", "status"])
        for s in stats:
            w.writerow([s.row, s.column, s.lang_pair, s.method,
                        "" if s.r is None else repr(s.r), "" if s.p_value is None else repr(s.p_value), s.n,
                        "" if s.ci_low is None else repr(s.ci_low), "" if s.ci_high is None else repr(s.ci_high),
                        "" if s.not_beaten is None else str(s.not_beaten).lower(),
                        f"skipped: {s.skipped}" if s.skipped else f"undefined: {s.undefined}" if s.undefined
                        else "ok"])


def write_signatures(path: str | Path, run: GridRun) -> None:
    """``row<TAB>aligner<TAB>lang_pair<TAB>signature`` for every cell that ran."""
    lines = ["row\taligner\tlang_pair\tsignature"]
    for c in run.cells:
        if c.signature is not None:
            lines.append(f"{run.row_names[c.row]}\t{run.grid.columns[c.column].name}\t{c.lang_pair}\t{c.signature}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_chart(path: str | Path, run: GridRun, stats: list[CellStat], method: str = "pearson") -> None:
    """One line per column through the rows' average absolute correlation (markers), with each
    language pair's value as a faint dot; rows that did not run are marked "skipped"."""
    lps = [lp.name for lp in run.lang_pairs]
    by_key = {(s.row_index, s.column_index, s.lang_pair): s for s in stats if s.method == method}
    series = {col.name: [[abs(s.r) if (s := by_key.get((i, j, lp))) is not None and s.r is not None else None
                          for lp in lps] for i in range(len(run.row_names))]
              for j, col in enumerate(run.grid.columns)}
    label = {"pearson": "Pearson r", "spearman": "Spearman rho", "kendall": "Kendall tau"}[method]
    dot_line_chart(path, run.row_names, series, f"{run.grid.title}\n(dots: the {len(lps)} language pairs)",
                   f"|{label}| with human scores")


OUTPUT_FILES = {"table": "table.md", "csv": "results.csv", "chart": "chart.png", "signatures": "signatures.tsv"}


def write_outputs(out_dir: str | Path, run: GridRun, stats: list[CellStat], method: str = "pearson",
                  alpha: float = 0.05, command: str | None = None) -> dict[str, Path]:
    """Write ``table.md``, ``results.csv``, ``chart.png`` and ``signatures.tsv`` into ``out_dir``."""
    writers = {"table": lambda p: p.write_text(markdown(run, stats, method, alpha, command), encoding="utf-8"),
               "csv": lambda p: write_csv(p, stats), "chart": lambda p: write_chart(p, run, stats, method),
               "signatures": lambda p: write_signatures(p, run)}
    return write_output_set(out_dir, writers, OUTPUT_FILES)
