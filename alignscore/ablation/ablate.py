"""A whole ablation, as ``alignscore ablate`` runs it: a grid's cells on WMT DAseg data
(:func:`ablate_daseg`) or on a challenge set (:func:`ablate_challenge`), from checking the output
folder to writing it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config.compile import Source
from ..config.sources import input_files
from ..textio import check_output_folder, read_lines
from .grid import Grid

__all__ = ["ablate_challenge", "ablate_daseg"]


def _quiet(msg: str) -> None:
    pass


def _read_by(grid: Grid, flags: Sequence[Source]) -> list[str]:
    """The files the grid's cells read (run files, stop words, baselines...: the flags' and the grid's own)."""
    return [f for row in grid.rows for column in grid.columns for f in input_files(grid.sources(row, column, flags))]


def ablate_daseg(grid: Grid, grid_path: str, data: str, flags: Sequence[Source], *,
                 lang_pairs: Sequence[str] | None = None, year: str | None = None, idf_corpus: str | None = None,
                 output: str | None = None, inputs: Sequence[str] = (), methods: Sequence[str] = (),
                 significance: float = 0.05, bootstrap: int = 1000, seed: int = 0, progress: bool = True,
                 log: Callable[[str], None] = _quiet, command: str | None = None, start: float | None = None,
                 **planning: Any) -> tuple[dict[str, Path], int]:
    """Run ``grid`` (read from ``grid_path``) on the DAseg folder ``data``, correlate every cell
    with the human scores and write the outputs (default folder: ``ablation-<grid name>``).

    Parameters
    ----------
    inputs : sequence of str
        Other files the run reads, which the output folder must not hold.
    methods : sequence of str
        The correlations to report, the first one tabled (default: pearson).
    start : float, optional
        When the command started (:func:`time.perf_counter`), for the wall time recorded.
    **planning
        ``models``, ``download``, ``skip_missing`` of :func:`~alignscore.ablation.runner.run_grid`.

    Returns
    -------
    (dict of str to Path, int)
        The files written, and how many cells were skipped.
    """
    from ..evaluation.wmt import load_daseg
    from .report import OUTPUT_FILES, evaluate, write_outputs
    from .runner import run_grid

    start = time.perf_counter() if start is None else start
    pairs = load_daseg(data, lang_pairs, year=year, idf_corpus=idf_corpus)  # checks the data first
    out = Path(output or f"ablation-{grid.name}")
    # before any work: the folder must be writable and hold none of the inputs
    check_output_folder(out, OUTPUT_FILES.values(), [grid_path, idf_corpus, *inputs, *_read_by(grid, flags)])
    log(f"{grid.name}: {len(grid.rows)} rows x {len(grid.columns)} columns x {len(pairs)} language pair(s)")
    run = run_grid(grid, pairs, flags, progress=progress, log=log, **planning)
    methods = list(dict.fromkeys(methods)) or ["pearson"]
    log("meta-evaluating" + (f" ({bootstrap} bootstrap resamples)" if bootstrap and "pearson" in methods else ""))
    stats = evaluate(run, methods, alpha=significance, bootstrap=bootstrap, seed=seed)
    run.seconds["wall"] = time.perf_counter() - start
    paths = write_outputs(out, run, stats, methods[0], significance, command)
    return paths, len({(c.row, c.column) for c in run.cells if c.skipped})


def ablate_challenge(grid: Grid, grid_path: str, challenge_set: str, flags: Sequence[Source], *,
                     idf_corpus: str | None = None, output: str | None = None, dedupe: bool = False,
                     dedupe_label: str = "dedupe=",
                     resamples: int = 1000, seed: int = 0, progress: bool = True,
                     log: Callable[[str], None] = _quiet, command: str | None = None,
                     **planning: Any) -> tuple[dict[str, Path], int]:
    """Run ``grid``'s cells on the challenge set ``challenge_set`` and write the outputs (default
    folder: ``challenge-<grid name>``); ``dedupe`` drops items that repeat an earlier one
    (``dedupe_label``: the option as the caller names it).

    Returns
    -------
    (dict of str to Path, int)
        The files written, and how many cells were skipped.
    """
    from ..evaluation.challenge import check_sizes, read_items, settle_repeats
    from .challenge import OUTPUT_FILES, run_grid_challenge, write_outputs

    items = read_items(challenge_set)
    corpus = read_lines(idf_corpus) if idf_corpus is not None else None
    out = Path(output or f"challenge-{grid.name}")
    check_output_folder(out, OUTPUT_FILES.values(), [grid_path, challenge_set, idf_corpus, *_read_by(grid, flags)])
    items, _ = settle_repeats(items, dedupe, dedupe_label, log)
    check_sizes(items)
    log(f"{grid.name}: {len(grid.rows)} rows x {len(grid.columns)} columns on {len(items)} challenge items")
    run = run_grid_challenge(grid, items, flags, idf_corpus=corpus, idf_corpus_name=idf_corpus, progress=progress,
                             resamples=resamples, seed=seed, log=log, **planning)
    return write_outputs(out, run, command), len(run.skipped)
