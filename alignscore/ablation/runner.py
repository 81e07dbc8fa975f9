"""Running an ablation grid: every cell's scores, through the engine, each sentence encoded once.

Every cell of a grid, for every language pair, is compiled by the one compiler into a run
(:meth:`Grid.sources <alignscore.ablation.grid.Grid.sources>`) and checked against its model
before anything is encoded (:func:`plan`): a cell that cannot be built is an error, and only a
model that is not on this machine, or a language pair without an idf-L corpus, makes a cell
skipped. Then, per encoder (model and encoder settings), :func:`~alignscore.engine.score_groups`
scores every cell of that encoder at once: one forward pass per batch gives every layer any cell
reads, every aggregator is applied in that pass; weights, token roles and identical alignments
are shared between cells, and each aligner scores all the masses of a batch together.

The numbers are those of the cell's run scored alone (``alignscore score`` with the same
options); only the batches differ, which changes nothing beyond float rounding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..aggregators.single import SingleLayer
from ..composition import Composition
from ..config import RunSpec, check_model, encoder_of
from ..config.compile import Source, compile_run, merge
from ..encoders.base import Encoder
from ..encoders.layers import packaged_model_dir
from ..engine import Pairs, score_groups
from ..errors import ConfigError, ModelLoadError
from ..evaluation.wmt import LangPair
from ..scorer import Scorer
from ..weighting.schemes import Corpus
from .grid import Entry, Grid

__all__ = ["CellPlan", "CellRun", "GridRun", "Plan", "model_available", "plan", "run_grid"]


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


def model_available(name: str) -> bool:
    """True when the model is on this machine: a local directory, the packaged MiniLM, or in
    the Hugging Face cache (or a static table's file). Never touches the network."""
    if packaged_model_dir(name) is not None or Path(name).is_dir() or Path(name).is_file():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - an unusual cache or hub version: treat as absent
        return False


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
class Plan:
    """Every cell of a grid over its places, checked; ``row_names`` with ``{layer}`` and
    ``{model}`` filled in; ``models``: the model each role runs; ``idf_l``: whether a cell asks
    for idf-L."""

    cells: list[CellPlan]
    row_names: list[str]
    models: dict[str, str]
    idf_l: bool = False


def plan(grid: Grid, places: Sequence[LangPair], flags: Sequence[Source] = (),
         models: Mapping[str, str] | None = None, download: bool = False) -> Plan:
    """Compile and check every cell of ``grid`` for every place: each cell's run (the
    place's idf-L corpus supplied where the cell's weighting reads one) and its composition
    resolved for its model (the model's configuration and tokenizer are read, not its weights).

    Raises:
        ConfigError: a cell that cannot be built, naming the grid's key (or the command's
            option) at fault.
    """
    corpora = {id(p): Corpus(p.idf_corpus, p.idf_corpus_path.name if p.idf_corpus_path else None)
               for p in places if p.idf_corpus is not None}
    encoders: dict[Any, Encoder | str] = {}
    cells: list[CellPlan] = []
    names: list[str] = []
    roles: dict[str, str] = {}
    idf_l = False
    for i, row in enumerate(grid.rows):
        shown = None
        for j, column in enumerate(grid.columns):
            sources = grid.sources(row, column, flags, models)
            role = grid.role(row, column)
            merged = merge(sources)
            needs_corpus = merged.part("weighting") == "idf-L" and merged.given("idf_corpus") is None
            idf_l = idf_l or merged.part("weighting") == "idf-L"
            for place in places:
                cell = CellPlan(i, j, place.name)
                cells.append(cell)
                if needs_corpus and id(place) not in corpora:
                    cell.skipped = _no_corpus(place)
                    continue
                model = merged.given("model")
                if model is not None and not download and not model_available(str(model.value)):
                    cell.skipped = _not_here(str(model.value))
                    continue
                cell.spec = compile_run(sources, {"idf_corpus": corpora[id(place)]} if needs_corpus else None)
                roles.setdefault(role, cell.spec.encoder.model)
                encoder = _encoder(cell.spec, encoders, download)
                if isinstance(encoder, str):
                    cell.skipped = encoder
                    continue
                cell.scorer = Scorer(encoder, cell.spec.composition, cell.spec.runtime)
                try:
                    check_model(cell.scorer, cell.spec.labels)
                except ModelLoadError as exc:
                    cell.skipped, cell.scorer = str(exc), None
                    continue
                cell.composition = cell.scorer.resolved()
                if shown is None:
                    shown = _display(row, cell)
        names.append(shown or row.name)
    for role in grid.roles:
        roles.setdefault(role, grid.model(role, flags, models))
    return Plan(cells, names, roles, idf_l)


def _not_here(model: str) -> str:
    return f"model {model!r} is not on this machine (nothing is downloaded without --download)"


def _no_corpus(place: LangPair) -> str:
    if place.year:
        return (f"no idf-L corpus for {place.name} (put newstest{place.year}-{place.src}{place.tgt}-ref.{place.tgt} "
                "next to the data, or pass --idf-corpus)")
    return "idf-L needs a corpus: pass --idf-corpus FILE"


def _encoder(spec: RunSpec, encoders: dict[Any, Encoder | str], download: bool) -> Encoder | str:
    """One encoder per encoder spec and device, or why its model cannot run here."""
    key = (spec.encoder, spec.runtime.device)
    if key not in encoders:
        name = spec.encoder.model
        if not download and not model_available(name):
            encoders[key] = _not_here(name)
        else:
            encoders[key] = encoder_of(spec.encoder, spec.runtime.device)
    return encoders[key]


def _display(row: Entry, cell: CellPlan) -> str:
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
             models: Mapping[str, str] | None = None, download: bool = False, progress: bool = False,
             log: Callable[[str], None] | None = None) -> GridRun:
    """Score every cell of ``grid`` on every language pair.

    Args:
        grid: the grid (:func:`~alignscore.ablation.grid.load_grid`).
        lang_pairs: the data (:func:`~alignscore.evaluation.wmt.load_daseg`).
        flags: the command's options (sources: its preset or run file, then its flags), layered
            on each cell's model role (:meth:`Grid.sources`).
        models: the models the command names per role kind (``--mnli-model``, ``--static-model``).
        download: allow models that are not on this machine to be downloaded; otherwise cells
            of such models are skipped with a note.
        progress: progress bars on stderr; ``log`` receives one line per stage.
    """
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    t_start = time.perf_counter()
    checked = plan(grid, lang_pairs, flags, models, download)
    cells = [CellRun(c.row, c.column, c.place, skipped=c.skipped) for c in checked.cells]
    groups: dict[Any, list[tuple[CellRun, CellPlan]]] = {}
    for run, c in zip(cells, checked.cells):
        if c.scorer is not None:
            assert c.spec is not None
            run.signature = str(c.scorer.signature())
            groups.setdefault((c.spec.encoder, c.spec.runtime.device), []).append((run, c))
    seconds = {"plan": time.perf_counter() - t_start}
    for jobs in groups.values():
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
