"""Running an ablation grid: every cell's scores, through the engine, each sentence encoded once.

The grid's cells (row x column x language pair) are each a composition
(:class:`~alignscore.composition.Composition`, built from the cell's spec); running them one by
one would encode the same sentences again for every cell. Here, per model and language pair,
:func:`~alignscore.engine.score_many` scores every cell of that model at once: one forward pass per
batch gives every layer any cell reads and every aggregator is applied in that pass; weights,
token roles and identical alignments are shared between cells, and each aligner scores all the
masses of a batch together.

The numbers are those of the cell's composition scored alone (:func:`build_scorer`); only the
batches differ, which changes nothing beyond float rounding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..composition import Composition, build, build_filter
from ..encoders.base import Encoder
from ..encoders.spec import EncoderSpec
from ..spec import encoder_of
from ..encoders.layers import packaged_model_dir
from ..engine import Pairs, score_groups
from ..errors import AlignScoreError, ConfigError, ModelLoadError
from ..evaluation.wmt import LangPair
from ..runtime import Runtime
from ..scorer import Scorer
from ..weighting.schemes import Corpus
from .grid import CellSpec, Grid

__all__ = ["CellRun", "GridRun", "Skip", "build_composition", "build_filter", "build_scorer", "grid_encoders",
           "model_available", "row_display_name", "run_grid"]


class Skip(Exception):
    """A cell that cannot run here (model not on this machine, no idf-L corpus, a layer the
    model does not have); the table shows the reason instead of a number."""


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


def build_composition(spec: CellSpec, grid: Grid, encoder: Encoder, lang_pair: LangPair,
                      corpora: dict[Any, Corpus] | None = None) -> Composition:
    """The composition of one cell for one language pair (idf-L reads that pair's corpus),
    resolved for ``encoder``.

    Raises:
        Skip: the cell cannot run here.
        ConfigError: the grid composes parts that do not fit.
    """
    role = grid.models[spec.model]
    cell = spec.spec(role.model, role.layer)
    if spec.weighting == "idf-L" or getattr(spec.weighting, "name", None) == "idf-L":
        if lang_pair.idf_corpus is None:
            raise Skip(f"no idf-L corpus for {lang_pair.name} (put newstest{lang_pair.year}-"
                       f"{lang_pair.src}{lang_pair.tgt}-ref.{lang_pair.tgt} next to the data, or pass --idf-corpus)")
        # one corpus object per file: its document frequencies are counted once for every cell
        key = lang_pair.idf_corpus_path or id(lang_pair.idf_corpus)
        corpora = {} if corpora is None else corpora
        path = lang_pair.idf_corpus_path
        corpus = corpora.setdefault(key, Corpus(lang_pair.idf_corpus, path.name if path else None))
        cell["idf_corpus"] = corpus
    composition = build(cell, grid.base_dir, where=f"cell {spec.aligner}")
    try:
        return composition.resolve(encoder)
    except ConfigError as exc:
        if "does not exist" in str(exc):
            raise Skip(f"{exc}") from None
        raise


def build_scorer(spec: CellSpec, grid: Grid, encoder: Encoder, lang_pair: LangPair,
                 batch_size: int = 64) -> Scorer:
    """A :class:`Scorer` of one cell for one language pair: the cell's composition alone."""
    return Scorer(encoder, build_composition(spec, grid, encoder, lang_pair), Runtime(batch_size=batch_size))


def row_display_name(template: str, spec: CellSpec, grid: Grid, encoder: Encoder | None) -> str:
    """A row name with ``{layer}`` (the resolved single layer) and ``{model}`` filled in."""
    if "{" not in template:
        return template
    role = grid.models[spec.model]
    layer: Any = spec.spec(role.model, role.layer)["layer"]
    if encoder is not None and spec.aggregator.name == "single":
        try:
            layer = build({"layer": layer}).resolve(encoder).aggregator.layers[0]
        except AlignScoreError:
            pass
    try:
        return template.format(layer=layer, model=grid.models[spec.model].model)
    except (KeyError, IndexError, ValueError):
        raise ConfigError(f"row name {template!r}: only {{layer}} and {{model}} can be filled in") from None


def grid_encoders(grid: Grid, device: str | None = None, download: bool = False
                  ) -> tuple[dict[str, Encoder], dict[str, str]]:
    """One encoder per model of the grid's roles, and why each model that cannot run here cannot
    (not on this machine without ``download``, or its tokenizer or config does not load)."""
    encoders: dict[str, Encoder] = {}
    model_problem: dict[str, str] = {}
    for spec in grid.models.values():
        name = spec.model
        if name in encoders or name in model_problem:
            continue
        if not download and not model_available(name):
            model_problem[name] = f"model {name!r} is not on this machine (nothing is downloaded without --download)"
            continue
        enc = encoder_of(EncoderSpec(name), device)
        try:
            enc.num_layers  # loads the tokenizer and config (never the weights yet)
        except ModelLoadError as exc:
            model_problem[name] = str(exc)
            continue
        encoders[name] = enc
    return encoders, model_problem


@dataclass
class _Job:
    cell: CellRun
    composition: Composition


def run_grid(grid: Grid, lang_pairs: Sequence[LangPair], *, device: str | None = None, batch_size: int = 64,
             download: bool = False, progress: bool = False,
             log: Callable[[str], None] | None = None) -> GridRun:
    """Score every cell of ``grid`` on every language pair.

    Args:
        grid: the grid, with its models already overridden as wanted (:meth:`Grid.with_models`).
        lang_pairs: the data (:func:`~alignscore.evaluation.wmt.load_daseg`).
        device: where the encoders run.
        batch_size: texts per encoder batch (changes a score by float rounding at most).
        download: allow models that are not on this machine to be downloaded; otherwise cells
            of such models are skipped with a note.
        progress: progress bars on stderr; ``log`` receives one line per stage.
    """
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    t_start = time.perf_counter()
    encoders, model_problem = grid_encoders(grid, device, download)

    cells: list[CellRun] = []
    jobs: dict[str, list[_Job]] = {}
    corpora: dict[Any, Corpus] = {}
    row_names: list[str] = []
    for i, row in enumerate(grid.rows):
        display = None
        for j, col in enumerate(grid.columns):
            spec = grid.cell(row, col)
            model = grid.models[spec.model].model
            enc = encoders.get(model)
            if display is None:
                display = row_display_name(row.name, spec, grid, enc)
            for lp in lang_pairs:
                cell = CellRun(i, j, lp.name)
                cells.append(cell)
                if enc is None:
                    cell.skipped = model_problem[model]
                    continue
                try:
                    composition = build_composition(spec, grid, enc, lp, corpora)
                except Skip as exc:
                    cell.skipped = str(exc)
                    continue
                cell.signature = composition.signature(enc)
                jobs.setdefault(model, []).append(_Job(cell, composition))
        row_names.append(display or row.name)
    seconds = {"plan": time.perf_counter() - t_start}

    runtime = Runtime(batch_size=batch_size, progress=progress)
    for model, model_jobs in jobs.items():
        try:
            _run_model(encoders[model], model_jobs, lang_pairs, runtime, say, seconds)
        except ModelLoadError as exc:
            for job in model_jobs:
                job.cell.skipped, job.cell.scores = str(exc), None
    seconds["total"] = time.perf_counter() - t_start
    models = {key: spec.model for key, spec in grid.models.items()}
    return GridRun(grid, lang_pairs, row_names, cells, models, seconds)


def _run_model(encoder: Encoder, jobs: list[_Job], lang_pairs: Sequence[LangPair], runtime: Runtime,
               say: Callable[[str], None], seconds: dict[str, float]) -> None:
    """Every cell of one model: one engine call, every language pair's sentences encoded once."""
    t = time.perf_counter()
    used = [lp for lp in lang_pairs if any(j.cell.lang_pair == lp.name for j in jobs)]
    per_lp = [[j for j in jobs if j.cell.lang_pair == lp.name] for lp in used]
    layers = sorted({k for j in jobs for k in j.composition.aggregator.layers})
    say(f"{len(jobs)} cell(s) of {len(used)} language pair(s) with {encoder.name}: layers "
        f"{','.join(map(str, layers))} in one pass")
    results = score_groups(encoder, [Pairs.from_pairs(lp.references, lp.candidates) for lp in used],
                           [[j.composition for j in lp_jobs] for lp_jobs in per_lp], runtime)
    for lp_jobs, lp_results in zip(per_lp, results):
        for job, result in zip(lp_jobs, lp_results):
            job.cell.scores = result.metrics[job.composition.metric].double().numpy()
            job.cell.empty = int(result.empty.sum())
    seconds[f"score {encoder.name}"] = time.perf_counter() - t
