"""Running an ablation grid: every cell's scores, through the engine, each sentence encoded once.

Every cell of a grid, for every language pair, is compiled by the one compiler into a run
(:meth:`Grid.sources <alignscore.ablation.grid.Grid.sources>`) and checked against its model
before anything is encoded (:func:`plan_grid`, through :func:`~alignscore.config.plan.plan_runs`):
every cell that cannot be built is an error, and so is a model that is not on this machine, unless
the cells that need it are to be skipped (``skip_missing``); a language pair without an idf-L
corpus makes a cell skipped. Then, per encoder (model and encoder settings), :func:`~alignscore.engine.score_groups`
scores every cell of that encoder at once: one forward pass per batch gives every layer any cell
reads, every aggregator is applied in that pass; weights, token roles and identical alignments
are shared between cells, and each aligner scores all the masses of a batch together.

The numbers are those of the cell's run scored alone (``alignscore score`` with the same
options); only the batches differ, which changes nothing beyond float rounding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..aggregators.single import SingleLayer
from ..composition import Composition
from ..config import RunSpec
from ..config.compile import Source, merge
from ..config.plan import RunSources, plan_runs
from ..engine import Pairs, score_groups
from ..errors import ConfigError, ModelLoadError
from ..evaluation.wmt import LangPair
from ..scorer import Scorer, by_encoder
from ..settings import keyword
from ..weighting import WEIGHTINGS
from ..weighting.schemes import Corpus, IdfL
from .grid import GridEntry, Grid

__all__ = ["CellPlan", "CellRun", "GridPlan", "GridRun", "plan_grid", "run_grid"]


@dataclass
class CellRun:
    """One cell for one language pair: its per-segment scores, or why it was skipped."""

    row: int
    column: int
    lang_pair: str
    scores: np.ndarray | None = None
    signature: str | None = None
    skipped: str | None = None
    empty: int = 0


@dataclass
class GridRun:
    """The outcome of :func:`run_grid`: cells in row, column, language-pair order."""

    grid: Grid
    lang_pairs: list[LangPair]
    row_names: list[str]
    cells: list[CellRun]
    models: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    idf_l: bool = False

    def cell(self, row: int, column: int, lang_pair: str) -> CellRun:
        for c in self.cells:
            if (c.row, c.column, c.lang_pair) == (row, column, lang_pair):
                return c
        raise KeyError((row, column, lang_pair))


@dataclass
class CellPlan:
    """One cell for one place (a language pair, or a challenge set): its run and its
    composition resolved for the encoder, or why it is skipped."""

    row: int
    column: int
    place: str
    spec: RunSpec | None = None
    scorer: Scorer | None = None
    composition: Composition | None = None
    skipped: str | None = None


@dataclass
class GridPlan:
    """Every cell of a grid over its places, checked; ``row_names`` with ``{layer}`` and
    ``{model}`` filled in; ``models``: the model each role runs; ``idf_l``: whether a cell asks
    for idf-L."""

    cells: list[CellPlan]
    row_names: list[str]
    models: dict[str, str]
    idf_l: bool = False


def plan_grid(grid: Grid, places: Sequence[LangPair], flags: Sequence[Source] = (),
              models: Mapping[str, str] | None = None, download: bool = False,
              skip_missing: bool = False, model_labels: Mapping[str, str] | None = None,
              label: Callable[[str], str] = keyword) -> GridPlan:
    """Compile and check every cell of ``grid`` for every place (:func:`~alignscore.config.plan.plan_runs`):
    each cell's run (the place's idf-L corpus supplied where the cell's weighting reads one) and
    its composition resolved for its model (the model's configuration and tokenizer are read,
    not its weights). A cell of a place without an idf-L corpus is skipped; with
    ``skip_missing``, so is a cell whose model is not on this machine (or, with ``download``,
    cannot be loaded).

    Raises:
        ConfigError: every cell that cannot be built, each naming the grid's key (or the
            command's option) at fault; a model that is not on this machine, unless
            ``skip_missing``.
    """
    corpora = {id(p): Corpus(p.idf_corpus, p.idf_corpus_path.name if p.idf_corpus_path else None)
               for p in places if p.idf_corpus is not None}
    cells: list[CellPlan] = []
    runs: list[RunSources] = []
    planned: list[CellPlan] = []
    idf_l = False
    for i, row in enumerate(grid.rows):
        for j, column in enumerate(grid.columns):
            sources = grid.sources(row, column, flags, models, model_labels)
            reads_idf_l, needs_corpus = _idf_l(sources)
            idf_l = idf_l or reads_idf_l
            for place in places:
                cell = CellPlan(i, j, place.name)
                cells.append(cell)
                if needs_corpus and id(place) not in corpora:
                    cell.skipped = _no_corpus(place, label)
                    continue
                runs.append(RunSources(sources, {IdfL.corpus_setting(): corpora[id(place)]} if needs_corpus else None))
                planned.append(cell)
    for cell, run in zip(planned, plan_runs(runs, skip_missing=skip_missing, download=download, label=label).runs):
        cell.spec, cell.scorer, cell.skipped = run.spec, run.scorer, run.skipped
        cell.composition = cell.scorer.resolved() if cell.scorer is not None else None
    names = [next((_display(row, c) for c in cells if c.row == i and c.composition is not None), row.name)
             for i, row in enumerate(grid.rows)]
    roles: dict[str, str] = {}
    for c in cells:
        if c.spec is not None:
            roles.setdefault(grid.role(grid.rows[c.row], grid.columns[c.column]), c.spec.encoder.model)
    for role in grid.roles:
        roles.setdefault(role, grid.model(role, flags, models))
    return GridPlan(cells, names, roles, idf_l)


def _idf_l(sources: Sequence[Source]) -> tuple[bool, bool]:
    """Whether a cell's weighting is idf-L, and whether it reads the place's corpus (it names none
    of its own); neither where its sources do not merge (the planner says why)."""
    try:
        merged = merge(sources)
    except ConfigError:
        return False, False
    idf_l = merged.part(WEIGHTINGS.stage) == "idf-L"
    return idf_l, idf_l and merged.given(IdfL.corpus_setting()) is None


def _no_corpus(place: LangPair, label: Callable[[str], str]) -> str:
    if place.year:
        return (f"no idf-L corpus for {place.name} (put newstest{place.year}-{place.src}{place.tgt}-ref.{place.tgt} "
                f"next to the data, or pass {label(IdfL.corpus_setting())})")
    return f"idf-L needs a corpus: pass {label(IdfL.corpus_setting())} FILE"


def _display(row: GridEntry, cell: CellPlan) -> str:
    """A row name with ``{layer}`` (the resolved single layer) and ``{model}`` filled in."""
    if "{" not in row.name:
        return row.name
    composition = cell.composition
    assert composition is not None
    layer: Any = composition.aggregator.layer if isinstance(composition.aggregator, SingleLayer) else None
    assert cell.spec is not None
    try:
        return row.name.format(layer=layer, model=cell.spec.encoder.model)
    except (KeyError, IndexError, ValueError):
        raise ConfigError(f"row name {row.name!r}: only {{layer}} and {{model}} can be filled in") from None


def run_grid(grid: Grid, lang_pairs: Sequence[LangPair], flags: Sequence[Source] = (), *,
             models: Mapping[str, str] | None = None, download: bool = False, skip_missing: bool = False,
             progress: bool = False, log: Callable[[str], None] | None = None,
             model_labels: Mapping[str, str] | None = None, label: Callable[[str], str] = keyword) -> GridRun:
    """Score every cell of ``grid`` on every language pair.

    Args:
        grid: the grid (:func:`~alignscore.ablation.grid.load_grid`).
        lang_pairs: the data (:func:`~alignscore.evaluation.wmt.load_daseg`).
        flags: the command's options (sources: its preset or run file, then its flags), layered
            on each cell's model role (:meth:`Grid.sources`).
        models: the models the command names per role kind (``--mnli-model``, ``--static-model``);
            ``model_labels``: how the caller names each, for errors (default ``models=['mnli']``);
            ``label``: how it names its other options (``skip_missing``, ...; default: as keywords).
        download: allow models that are not on this machine to be downloaded; otherwise such a
            model is an error before anything runs, or, with ``skip_missing``, its cells are
            skipped with a note (as are those of a model that cannot be loaded).
        progress: progress bars on stderr; ``log`` receives one line per stage.
    """
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    t_start = time.perf_counter()
    checked = plan_grid(grid, lang_pairs, flags, models, download, skip_missing, model_labels, label)
    cells = [CellRun(c.row, c.column, c.place, skipped=c.skipped) for c in checked.cells]
    built = [(run, c) for run, c in zip(cells, checked.cells) if c.scorer is not None]
    for run, c in built:
        run.signature = str(c.scorer.signature())  # type: ignore[union-attr]
    seconds = {"plan": time.perf_counter() - t_start}
    for group in by_encoder([c.scorer for _, c in built]):  # type: ignore[misc]
        jobs = [built[k] for k in group]
        try:
            _run_encoder(jobs, lang_pairs, progress, say, seconds)
        except ModelLoadError as exc:
            for run, _ in jobs:
                run.skipped, run.scores = str(exc), None
    seconds["total"] = time.perf_counter() - t_start
    return GridRun(grid, lang_pairs, checked.row_names, cells, checked.models, seconds, checked.idf_l)


def _run_encoder(jobs: list[tuple[CellRun, CellPlan]], lang_pairs: Sequence[LangPair], progress: bool,
                 say: Callable[[str], None], seconds: dict[str, float]) -> None:
    """Every cell of one encoder: one engine call, every language pair's sentences encoded once."""
    t = time.perf_counter()
    first = jobs[0][1]
    assert first.scorer is not None and first.spec is not None
    encoder = first.scorer.encoder
    runtime = replace(first.spec.runtime, progress=progress)
    used = [lp for lp in lang_pairs if any(run.lang_pair == lp.name for run, _ in jobs)]
    per_lp = [[(run, c) for run, c in jobs if run.lang_pair == lp.name] for lp in used]
    layers = sorted({k for _, c in jobs for k in c.composition.aggregator.layers_read()})  # type: ignore[union-attr]
    say(f"{len(jobs)} cell(s) of {len(used)} language pair(s) with {encoder.name}: layers "
        f"{','.join(map(str, layers))} in one pass")
    results = score_groups(encoder, [Pairs.from_pairs(lp.references, lp.candidates) for lp in used],
                           [[c.composition for _, c in lp_jobs] for lp_jobs in per_lp], runtime)
    for lp_jobs, lp_results in zip(per_lp, results):
        for (run, c), result in zip(lp_jobs, lp_results):
            run.scores = result.metrics[c.composition.metric].double().numpy()  # type: ignore[union-attr,index]
            run.empty = int(result.empty.sum())
    seconds[f"score {encoder.name}"] = time.perf_counter() - t
