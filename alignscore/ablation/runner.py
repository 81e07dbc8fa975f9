"""Running an ablation grid: every cell's scores, encoding each unique sentence once per model.

The grid's cells (row x column x language pair) are each a :class:`~alignscore.scorer.Scorer`;
running them one by one would encode the same sentences again for every cell. Here, per model:

1. tokenize the unique texts of every language pair once;
2. one forward pass per batch produces every layer any cell of that model reads, and every
   distinct aggregator (single layer, power means, routing) is applied to those states in the
   same pass; the results are kept, unit-normalised, per aggregator;
3. per language pair, each cell's weighting, token filter and aligner run on the stored vectors
   (weights, token roles and identical alignments are computed once and shared; the cells that
   read the same aggregator share each batch's gathered vectors, and each aligner scores all
   their masses at once, sharing its cost or similarity matrices: :func:`align_shared`).

The numbers are those of the cell's ``Scorer`` run alone (same pipeline functions; aligners score
each pair on its own); only the batches differ, which changes nothing beyond float rounding.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from ..aggregators import AGGREGATORS
from ..aggregators.base import Aggregator
from ..aggregators.single import SingleLayer
from ..aligners import ALIGNERS
from ..aligners.base import Aligner
from ..encoders.base import Tokenized
from ..encoders.huggingface import HFEncoder
from ..encoders.layers import packaged_model_dir
from ..errors import AlignScoreError, ConfigError, ModelLoadError
from ..evaluation.wmt import LangPair
from ..filters import FILTERS, token_roles
from ..filters.base import TokenFilter
from ..pipeline import embed, empty_pairs, pair_batch, unique_texts, unit
from ..scorer import Scorer
from ..textio import read_lines
from ..tokens import TokenTable, pad_gather
from ..weighting import WEIGHTINGS
from ..weighting.base import WeightContext
from .grid import CellSpec, Grid, PartSpec


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
    the Hugging Face cache. Never touches the network."""
    if packaged_model_dir(name) is not None or Path(name).is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - an unusual cache or hub version: treat as absent
        return False


def _kwargs(part: PartSpec) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in part.args}


def _build(registry: Any, part: PartSpec, **extra: Any) -> Any:
    try:
        return registry.build(part.name, **_kwargs(part), **extra)
    except TypeError as exc:
        raise ConfigError(f"{registry.stage} {part}: {exc}") from None


def build_aggregator(spec: CellSpec, grid: Grid, encoder: HFEncoder) -> Aggregator:
    """The cell's aggregator; a single layer comes from the row (``layer``), else from the
    model role (``[models.<role>].layer`` or ``--layer``), else the model's tuned default."""
    if spec.aggregator.name == "single":
        kwargs = _kwargs(spec.aggregator)
        layer = spec.layer if spec.layer is not None else kwargs.get("layer", grid.models[spec.model].layer)
        aggregator: Aggregator = SingleLayer(layer)
    else:
        aggregator = _build(AGGREGATORS, spec.aggregator)
    default = encoder.default_layer() if isinstance(aggregator, SingleLayer) and aggregator.layer is None else None
    try:
        aggregator.layers(encoder.num_layers, default)
    except ConfigError as exc:
        raise Skip(f"{exc} ({encoder.name})") from None
    return aggregator


def build_filter(part: PartSpec, base_dir: Path) -> TokenFilter:
    """A token filter; a ``file`` argument (relative to the grid file) is read as a word list and
    passed as ``words``, with the file name as ``name`` (for the stop-word filter)."""
    kwargs = _kwargs(part)
    if "file" in kwargs:
        path = base_dir / str(kwargs.pop("file"))
        kwargs.update(words=read_lines(path), name=path.name)
    try:
        return FILTERS.build(part.name, **kwargs)
    except TypeError as exc:
        raise ConfigError(f"token filter {part}: {exc}") from None


def build_scorer(spec: CellSpec, grid: Grid, encoder: HFEncoder, lang_pair: LangPair,
                 batch_size: int = 64) -> Scorer:
    """The :class:`Scorer` of one cell for one language pair (idf-L reads that pair's corpus).

    Raises:
        Skip: the cell cannot run here.
        ConfigError: the grid composes parts that do not fit.
    """
    aggregator = build_aggregator(spec, grid, encoder)
    kwargs: dict[str, Any] = {"sep": spec.sep}
    if spec.weighting == "idf-L":
        if lang_pair.idf_corpus is None:
            raise Skip(f"no idf-L corpus for {lang_pair.name} (put newstest{lang_pair.year}-"
                       f"{lang_pair.src}{lang_pair.tgt}-ref.{lang_pair.tgt} next to the data, or pass --idf-corpus)")
        path = lang_pair.idf_corpus_path
        kwargs.update(corpus=lang_pair.idf_corpus, corpus_name=path.name if path else None)
    weighting = WEIGHTINGS.build(spec.weighting, **kwargs)
    filters = tuple(build_filter(f, grid.base_dir) for f in spec.filters)
    aligner = _build(ALIGNERS, spec.aligner)
    metric = spec.metric or aligner.primary
    if metric not in aligner.metrics:
        raise ConfigError(f"aligner {spec.aligner} has no metric {metric!r} ({', '.join(aligner.metrics)})")
    return Scorer(encoder=encoder, aggregator=aggregator, filters=filters, special_tokens=spec.special_tokens,
                  weighting=weighting, aligner=aligner, batch_size=batch_size)


def row_display_name(template: str, spec: CellSpec, grid: Grid, encoder: HFEncoder | None) -> str:
    """A row name with ``{layer}`` (the resolved single layer) and ``{model}`` filled in."""
    if "{" not in template:
        return template
    layer: Any = spec.layer if spec.layer is not None else grid.models[spec.model].layer
    if encoder is not None and spec.aggregator.name == "single":
        try:
            layer = SingleLayer(layer).resolve(encoder.num_layers,
                                               encoder.default_layer() if layer is None else None)
        except AlignScoreError:
            pass
    try:
        return template.format(layer=layer, model=grid.models[spec.model].model)
    except (KeyError, IndexError, ValueError):
        raise ConfigError(f"row name {template!r}: only {{layer}} and {{model}} can be filled in") from None


@dataclass
class _Job:
    cell: CellRun
    scorer: Scorer
    metric: str


class _Stacked:
    """One ``[L, B, T, D] -> [B, T, sum D_a]`` function applying every aggregator ``a`` to its own
    layers (``positions[a]`` into the stacked states) and scaling its vectors to unit length;
    remembers the output widths ``D_a``."""

    def __init__(self, aggregators: list[Aggregator], positions: list[list[int]]) -> None:
        self.aggregators = aggregators
        # consecutive layers as a slice: a view of the states, not a copy
        self.positions: list[list[int] | slice] = [
            slice(p[0], p[-1] + 1) if p == list(range(p[0], p[-1] + 1)) else p for p in positions]
        self.widths: list[int] = []

    def __call__(self, states: torch.Tensor) -> torch.Tensor:
        outs = [agg(states[pos]) for agg, pos in zip(self.aggregators, self.positions)]
        self.widths = [o.shape[-1] for o in outs]
        packed = states.new_empty(*states.shape[1:3], sum(self.widths))
        start = 0
        for o in outs:
            unit(o, out=packed[..., start:start + o.shape[-1]])
            start += o.shape[-1]
        return packed


def run_grid(grid: Grid, lang_pairs: Sequence[LangPair], *, device: str | None = None, batch_size: int = 64,
             download: bool = False, progress: bool = False,
             log: Callable[[str], None] | None = None) -> GridRun:
    """Score every cell of ``grid`` on every language pair.

    Args:
        grid: the grid, with its models already overridden as wanted (:meth:`Grid.with_models`).
        lang_pairs: the data (:func:`~alignscore.evaluation.wmt.load_daseg`).
        device: where the encoders run.
        batch_size: texts per encoder batch (never changes a score).
        download: allow models that are not on this machine to be downloaded; otherwise cells
            of such models are skipped with a note.
        progress: progress bars on stderr; ``log`` receives one line per stage.
    """
    say = log or (lambda _msg: None)
    lang_pairs = list(lang_pairs)
    t_start = time.perf_counter()
    encoders: dict[str, HFEncoder] = {}
    model_problem: dict[str, str] = {}
    for spec in grid.models.values():
        name = spec.model
        if name in encoders or name in model_problem:
            continue
        if not download and not model_available(name):
            model_problem[name] = f"model {name!r} is not on this machine (nothing is downloaded without --download)"
            continue
        enc = HFEncoder(name, device_name=device)
        try:
            enc.num_layers  # loads the tokenizer and config (never the weights yet)
        except ModelLoadError as exc:
            model_problem[name] = str(exc)
            continue
        encoders[name] = enc

    cells: list[CellRun] = []
    jobs: dict[str, list[_Job]] = {}
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
                    scorer = build_scorer(spec, grid, enc, lp, batch_size)
                except Skip as exc:
                    cell.skipped = str(exc)
                    continue
                cell.signature = scorer.signature()
                jobs.setdefault(model, []).append(_Job(cell, scorer, spec.metric or scorer.aligner.primary))
        row_names.append(display or row.name)
    seconds = {"plan": time.perf_counter() - t_start}

    by_name = {lp.name: lp for lp in lang_pairs}
    for model, model_jobs in jobs.items():
        try:
            _run_model(encoders[model], model_jobs, by_name, batch_size, progress, say, seconds)
        except ModelLoadError as exc:
            for job in model_jobs:
                job.cell.skipped, job.cell.scores = str(exc), None
    seconds["total"] = time.perf_counter() - t_start
    models = {key: spec.model for key, spec in grid.models.items()}
    return GridRun(grid, lang_pairs, row_names, cells, models, seconds)


def _run_model(encoder: HFEncoder, jobs: list[_Job], lang_pairs: dict[str, LangPair], batch_size: int,
               progress: bool, say: Callable[[str], None], seconds: dict[str, float]) -> None:
    used = [lp for lp in lang_pairs if any(j.cell.lang_pair == lp for j in jobs)]
    # Per language pair, its unique texts and pairs exactly as Scorer.score builds them; across
    # language pairs, every unique text once, for the encoder.
    local: dict[str, tuple[list[str], torch.Tensor]] = {}
    flat: list[str] = []
    for lp in used:
        data = lang_pairs[lp]
        local[lp] = unique_texts(data.references + data.candidates)
        flat += local[lp][0]
    texts, inverse = unique_texts(flat)

    t = time.perf_counter()
    say(f"tokenizing {len(texts)} unique texts of {len(used)} language pair(s) with {encoder.name}")
    table = TokenTable.from_tokenized(encoder.tokenize(texts))
    seconds[f"tokenize {encoder.name}"] = time.perf_counter() - t

    num_layers = encoder.num_layers
    aggregators: dict[str, Aggregator] = {}
    for job in jobs:
        agg = job.scorer.aggregator
        aggregators.setdefault(agg.signature(num_layers, _default(encoder, agg)), agg)
    agg_layers = {sig: agg.layers(num_layers, _default(encoder, agg)) for sig, agg in aggregators.items()}
    union = sorted({k for ls in agg_layers.values() for k in ls})
    positions = [[union.index(k) for k in agg_layers[sig]] for sig in aggregators]

    t = time.perf_counter()
    say(f"encoding with {encoder.name}: layers {','.join(map(str, union))} in one pass, "
        f"{len(aggregators)} aggregator(s): {', '.join(aggregators)}")
    stacked = _Stacked(list(aggregators.values()), positions)
    packed = embed(encoder, table, union, stacked, batch_size=batch_size, progress=progress,
                   desc=f"encoding ({encoder.name})")
    # each aggregator's unit vectors: a view of the one packed tensor (one copy of all vectors)
    bounds = np.cumsum([0] + stacked.widths).tolist()
    vectors = {sig: packed[:, bounds[i]:bounds[i + 1]] for i, sig in enumerate(aggregators)}
    device = packed.device
    seconds[f"encode {encoder.name}"] = time.perf_counter() - t

    t = time.perf_counter()
    bar = tqdm(total=len(jobs), desc=f"aligning ({encoder.name})", disable=not progress, file=sys.stderr,
               leave=False)
    tokenize = _MemoTokenize(encoder.tokenize)  # one idf-L corpus serves many pairs and weightings
    offset = 0
    for lp in used:
        lp_texts, lp_inverse = local[lp]
        lp_jobs = [j for j in jobs if j.cell.lang_pair == lp]
        global_text = inverse[offset:offset + len(lp_texts)]
        offset += len(lp_texts)
        # weights and token roles are fitted on this language pair's own table; masses are then
        # placed on the global token axis, so that its pairs read the packed vectors in place
        lp_table, where = table.select(global_text)
        where = where.to(device)
        size = len(lang_pairs[lp])
        pair_ref, pair_cand = lp_inverse[:size], lp_inverse[size:]
        n = len(lp_texts)
        ctx = WeightContext(table=lp_table, ref_counts=torch.bincount(pair_ref, minlength=n).double(),
                            cand_counts=torch.bincount(pair_cand, minlength=n).double(),
                            vocab_size=encoder.vocab_size, tokenize=tokenize)
        weights: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        roles: dict[tuple[str, ...], tuple[torch.Tensor, torch.Tensor]] = {}
        # Distinct alignments, grouped by aggregator: the cells of one group read the same token
        # vectors, so each batch of pairs gathers them once for all of the group.
        groups: dict[str, dict[tuple[str, ...], _Alignment]] = {}
        for job in lp_jobs:
            sc = job.scorer
            agg_sig = sc.aggregator.signature(num_layers, _default(encoder, sc.aggregator))
            wkey = sc.weighting.signature()
            if wkey not in weights:
                weights[wkey] = sc.weighting.fit(ctx)
            rkey = (sc.special_tokens,) + tuple(f.signature() for f in sc.filters)
            if rkey not in roles:
                roles[rkey] = token_roles(lp_table, sc.filters, sc.special_tokens)
            key = rkey + (wkey, sc.aligner.signature())
            group = groups.setdefault(agg_sig, {})
            if key not in group:
                ref_w, cand_w = weights[wkey]
                carries, matchable = roles[rkey]
                masses = (ref_w[lp_table.ids] * carries, cand_w[lp_table.ids] * carries, matchable)
                group[key] = _Alignment(sc.aligner, *(_placed(x, where, table) for x in masses))
            group[key].jobs.append(job)
        g_ref, g_cand = global_text[pair_ref], global_text[pair_cand]
        for agg_sig, group in groups.items():
            bar.set_postfix_str(f"{lp} {agg_sig}", refresh=False)
            align_shared(list(group.values()), vectors[agg_sig], table, g_ref, g_cand)
            for al in group.values():
                empty = int(empty_pairs(table, al.ref_mass, al.cand_mass, g_ref, g_cand).sum())
                for job in al.jobs:
                    job.cell.scores = al.results[job.metric].double().numpy()
                    job.cell.empty = empty
                bar.update(len(al.jobs))
    bar.close()
    seconds[f"weigh+align {encoder.name}"] = time.perf_counter() - t


def _placed(values: torch.Tensor, rows: torch.Tensor, table: TokenTable) -> torch.Tensor:
    """``[N]`` over ``table``'s token axis: ``values`` at ``rows``, 0 (False) elsewhere."""
    return values.new_zeros(int(table.offsets[-1])).index_copy_(0, rows, values.to(rows.device))


class _MemoTokenize:
    """``encoder.tokenize`` with a memory of the text lists it has tokenized (the same idf-L corpus
    is asked for by every language pair and idf-L weighting of a run)."""

    def __init__(self, tokenize: Callable[[Sequence[str]], Tokenized]) -> None:
        self.tokenize = tokenize
        self.memo: dict[tuple[str, ...], Tokenized] = {}

    def __call__(self, texts: Sequence[str]) -> Tokenized:
        key = tuple(texts)
        if key not in self.memo:
            self.memo[key] = self.tokenize(key)
        return self.memo[key]


@dataclass
class _Alignment:
    """One distinct alignment of a language pair: an aligner with the token masses and match
    targets of one weighting and token-role policy; the cells (jobs) that read its results."""

    aligner: Aligner
    ref_mass: torch.Tensor
    cand_mass: torch.Tensor
    matchable: torch.Tensor
    jobs: list[_Job] = field(default_factory=list)
    results: dict[str, torch.Tensor] = field(default_factory=dict)


def align_shared(alignments: list[_Alignment], vectors: torch.Tensor, table: TokenTable, pair_ref: torch.Tensor,
                 pair_cand: torch.Tensor, batch_size: int = 64) -> None:
    """:func:`~alignscore.pipeline.align_pairs` for several alignments over the same token vectors.

    The pairs are batched as ``align_pairs`` batches them (by total length, longest first; 64
    pairs, where large padded batches would cost more in page faults on a CPU than they save);
    each batch's vectors are gathered once (:func:`~alignscore.pipeline.pair_batch`) and
    every alignment gets that batch with its own masses and match targets; the alignments of one
    aligner go to it together (:meth:`~alignscore.aligners.base.Aligner.score_variants`, which
    lets it share work between them). Aligners never modify a batch, and score each pair
    independently of the others in it, so each alignment's ``results`` (``{metric: [P]}``) are
    those ``align_pairs`` returns for it.
    """
    lengths = table.lengths
    order = torch.argsort(lengths[pair_ref] + lengths[pair_cand], descending=True, stable=True)
    by_aligner: dict[str, list[_Alignment]] = {}
    for al in alignments:
        by_aligner.setdefault(al.aligner.signature(), []).append(al)
    first = alignments[0]
    for start in range(0, len(order), batch_size):
        sel = order[start:start + batch_size]
        base = pair_batch(vectors, table, first.ref_mass, first.cand_mass, first.matchable,
                          pair_ref[sel], pair_cand[sel])
        r_idx, r_ok = (t.to(vectors.device) for t in pad_gather(table.offsets, pair_ref[sel]))
        c_idx, c_ok = (t.to(vectors.device) for t in pad_gather(table.offsets, pair_cand[sel]))
        for same in by_aligner.values():
            batches = [base if al is first else replace(
                base, ref_mass=al.ref_mass[r_idx] * r_ok, cand_mass=al.cand_mass[c_idx] * c_ok,
                ref_match=al.matchable[r_idx] & r_ok, cand_match=al.matchable[c_idx] & c_ok) for al in same]
            for al, scores in zip(same, same[0].aligner.score_variants(batches)):
                for name, value in scores.items():
                    if name not in al.results:
                        al.results[name] = torch.empty(len(order), dtype=value.dtype)
                    al.results[name][sel] = value.detach().cpu()


def _default(encoder: HFEncoder, agg: Aggregator) -> int | None:
    if isinstance(agg, SingleLayer) and agg.layer is None:
        return encoder.default_layer()
    return None
