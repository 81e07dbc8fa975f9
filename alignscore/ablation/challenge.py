"""An ablation grid over a challenge set: every cell's accuracy per category, a table with the
best per column in bold and a heatmap, with sacreBLEU's sentence BLEU and chrF as reference rows.

Each cell of the grid (a row composed with a column) becomes a :class:`~alignscore.scorer.Scorer`
of its composition, planned with the grid's other cells
(:func:`~alignscore.ablation.runner.plan_grid`); the cells of one model share its encoder, so
:func:`~alignscore.evaluation.challenge.run_challenge` encodes each distinct text once for all
of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..evaluation.challenge import ALL, CompositionResult, Item, categories, evaluate_scores, run_challenge
from ..evaluation.challenge_report import jsonl
from ..config.compile import Source
from ..evaluation.wmt import LangPair
from ..settings import keyword
from ..textio import write_output_set
from .grid import Grid
from .runner import plan_grid

ALPHA = 0.05  # level of the paired test marked in the table
OUTPUT_FILES = {"table": "table.md", "results": "results.jsonl", "heatmap": "heatmap.png"}


@dataclass
class GridChallenge:
    """The outcome of :func:`run_grid_challenge`: a result per cell that ran (labelled ``row /
    column``), the reference metrics' results, and why the other cells did not run."""

    grid: Grid
    items: list[Item]
    results: list[CompositionResult]
    references: list[CompositionResult] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)


def reference_scores(items: Sequence[Item]) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """sacreBLEU's sentence BLEU (its defaults: 13a tokenisation, exp smoothing, effective
    order) and chrF (its defaults) of every item's good and bad candidate, with sacreBLEU's own
    signatures; empty when sacreBLEU is not installed."""
    try:
        from sacrebleu.metrics import BLEU, CHRF
    except ImportError:
        return []
    out = []
    nrefs = {len(i.refs) for i in items}
    for name, metric in (("sacreBLEU sentence BLEU", BLEU(effective_order=True)), ("sacreBLEU chrF", CHRF())):
        good = np.array([metric.sentence_score(i.good, list(i.refs)).score for i in items])
        bad = np.array([metric.sentence_score(i.bad, list(i.refs)).score for i in items])
        signature = str(metric.get_signature())
        if len(nrefs) > 1:
            signature = re.sub(r"nrefs:\d+", "nrefs:var", signature)
        out.append((name, signature, good, bad))
    return out


def run_grid_challenge(grid: Grid, items: Sequence[Item], flags: Sequence[Source] = (), *,
                       idf_corpus: Sequence[str] | None = None, idf_corpus_name: str | Path | None = None,
                       models: Mapping[str, str] | None = None, download: bool = False, skip_missing: bool = False,
                       progress: bool = False, resamples: int = 1000, seed: int = 0, references: bool = True,
                       log: Callable[[str], None] | None = None,
                       model_labels: Mapping[str, str] | None = None,
                       label: Callable[[str], str] = keyword) -> GridChallenge:
    """Score the challenge ``items`` with every cell of ``grid``; each cell is tested (paired
    bootstrap of the accuracy difference) against the cell of the grid's first row in its column.

    Parameters:
        grid: the grid (:func:`~alignscore.ablation.grid.load_grid`).
        items: the challenge set (:func:`~alignscore.evaluation.challenge.read_items`).
        flags, models, download, skip_missing, model_labels, label: the command's options, as for
            :func:`~alignscore.ablation.runner.run_grid`.
        idf_corpus: the sentences idf-L rows count document frequencies in (none: those rows
            are skipped with a note).
        references: also sacreBLEU's sentence BLEU and chrF (when it is installed).
        resamples, seed: of the bootstrap intervals.

    Returns:
        A :class:`GridChallenge`; cells are labelled ``"<row> / <column>"``.
    """
    say = log or (lambda _msg: None)
    # the challenge set stands where a language pair would: only its idf-L corpus is read
    place = LangPair("", "challenge", "set", [], [], np.zeros(0),
                     idf_corpus=list(idf_corpus) if idf_corpus is not None else None,
                     idf_corpus_path=Path(idf_corpus_name) if idf_corpus_name else None)
    checked = plan_grid(grid, [place], flags, models, download, skip_missing, model_labels, label)
    names, scorers, skipped, cells = [], [], {}, []
    for c in checked.cells:
        label = f"{checked.row_names[c.row]} / {grid.columns[c.column].name}"
        if c.scorer is None:
            skipped[label] = c.skipped or "skipped"
            continue
        names.append(label)
        scorers.append(replace(c.scorer, runtime=replace(c.scorer.runtime, progress=progress)))
        cells.append((c.row, c.column))
    say(f"{len(scorers)} cell(s) on {len(items)} items ({len(skipped)} skipped)")
    # each cell is tested against the first row's cell of its column: what the row's parts change
    first = {j: k for k, (i, j) in enumerate(cells) if i == 0}
    against = [first.get(j) if i != 0 else None for i, j in cells]
    results = run_challenge(scorers, items, names, resamples, seed, against) if scorers else []
    reference = reference_scores(items) if references else []
    refs = evaluate_scores(items, reference, resamples, seed, [None] * len(reference))
    return GridChallenge(grid, list(items), results, refs, skipped, checked.models)


def _columns(run: GridChallenge) -> tuple[list[str], list[str]]:
    cats = categories(run.items)
    controls = {i.category for i in run.items if i.control}
    scored = [c for c in cats if c not in controls]
    return scored + ([ALL] if scored else []), [c for c in cats if c in controls]


def markdown(run: GridChallenge, command: str | None = None) -> str:
    """Compositions (cells, then the reference metrics) x categories: the accuracy (share of
    items with good above bad), the best of each column in bold; controls as the mean score
    change bad - good (best: nearest 0)."""
    scored, controls = _columns(run)
    everything = run.results + run.references
    counts = {c: next((r.category(c).n for r in everything), 0) for c in scored + controls}
    lines = [f"## {run.grid.title}: challenge set", "",
             f"Accuracy: share of the items whose good candidate scores above the bad one (a tie is a miss), "
             f"{len(run.items)} items; **bold**: the best of each column (controls: the mean score change "
             f"bad - good nearest 0). ↑/↓: significantly above/below the first row's cell of its column (paired "
             f"bootstrap, two-sided p < {ALPHA}). 95% bootstrap intervals, tie counts and the paired tests: "
             f"results.jsonl.", ""]
    head = [f"{c} (n={counts[c]})" for c in scored] + [f"{c} Δ (n={counts[c]})" for c in controls]
    lines.append("| Composition | " + " | ".join(head) + " |")
    lines.append("|---|" + "---:|" * len(head))
    best: dict[str, float] = {}
    for c in scored:
        best[c] = max((r.category(c).accuracy or 0.0 for r in everything), default=0.0)
    for c in controls:  # compared as shown: a change of float rounding is no change
        best[c] = min((abs(round(r.category(c).mean_change or 0.0, 3)) for r in everything), default=0.0)

    def cell(r: CompositionResult, c: str) -> str:
        cat = r.category(c)
        if cat.control:
            value = round(cat.mean_change or 0.0, 3) + 0.0  # + 0.0: no "-0.000"
            text, is_best = f"{value:.3f}", abs(value) == best[c]
        else:
            value = cat.accuracy or 0.0
            text, is_best = f"{value:.3f}", value == best[c]
            if cat.test is not None and cat.test.p_value < ALPHA:
                text += "↑" if cat.test.difference > 0 else "↓"
        return f"**{text}**" if is_best else text

    for r in everything:
        lines.append(f"| {r.name} | " + " | ".join(cell(r, c) for c in scored + controls) + " |")
    notes: dict[str, int] = {}
    for label, why in run.skipped.items():
        mark = notes.setdefault(why, len(notes) + 1)
        lines.append(f"| {label} | skipped [{mark}] |" + " — |" * (len(head) - 1))
    lines.append("")
    lines += [f"[{k}] {why}  " for why, k in notes.items()]
    if run.references:
        lines.append("Reference rows: " + "; ".join(f"{r.name} ({r.signature})" for r in run.references)
                     + ", sacreBLEU's own tokenisation and smoothing, on its 0-100 scale.  ")
    lines.append(f"Models: {', '.join(f'{k} = {v}' for k, v in run.models.items())}.  ")
    if command:
        lines += ["", "Command:", "", "```", command, "```"]
    lines.append("Every cell's signature: results.jsonl.")
    return "\n".join(lines) + "\n"


def heatmap(path: str | Path, run: GridChallenge) -> None:
    """A PNG: compositions x scored categories, the accuracy as colour and as text."""
    from matplotlib.figure import Figure

    scored, _ = _columns(run)
    everything = run.results + run.references
    values = np.array([[r.category(c).accuracy or 0.0 for c in scored] for r in everything]) \
        if everything and scored else np.zeros((1, 1))
    rows = [r.name for r in everything] or ["(none)"]
    fig = Figure(figsize=(2.5 + 0.8 * max(1, len(scored)), 1.2 + 0.32 * len(rows)))
    ax = fig.subplots()
    image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=7,
                    color="black" if values[i, j] > 0.6 else "white")
    ax.set_xticks(range(len(scored)))
    ax.set_xticklabels(scored, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    ax.set_title(f"{run.grid.title}\naccuracy on {len(run.items)} challenge items", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.03)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_outputs(out_dir: str | Path, run: GridChallenge, command: str | None = None) -> dict[str, Path]:
    """Write ``table.md``, ``results.jsonl`` (every row with its signature) and ``heatmap.png``."""
    writers = {"table": lambda p: p.write_text(markdown(run, command), encoding="utf-8"),
               "results": lambda p: p.write_text(jsonl(run.results + run.references), encoding="utf-8"),
               "heatmap": lambda p: heatmap(p, run)}
    return write_output_set(out_dir, writers, OUTPUT_FILES)


__all__ = ["GridChallenge", "OUTPUT_FILES", "heatmap", "markdown", "reference_scores", "run_grid_challenge",
           "write_outputs"]
