"""Score a Ray Dataset: data-parallel batch inference on a Ray cluster (``pip install 'alignscore[ray]'``).

:func:`score_dataset` adds a column per metric of the composition to every row of a
``ray.data.Dataset`` (candidates in one column, references in another). It runs in three steps,
the first two on the driver before any actor starts:

1. the options compile to one :class:`~alignscore.config.RunSpec` (``alignscore.score``'s
   options), and the dataset's schema is checked: the two columns exist, hold text (a
   reference column may hold a list of texts per row: several references), and no output
   column would overwrite one of the input's;
2. one pass of Ray tasks over the dataset checks every value (a text, not null; a list with at
   least one reference) and, for a weighting that depends on the texts being scored (idf-S,
   SEP), counts its document frequencies per batch of blocks (a
   :class:`~alignscore.weighting.base.WeightState`: sums). The driver adds the batches' counts
   and turns the total into weights with the code a single process uses
   (:func:`~alignscore.stream.frozen_weighting`), so the weights are those of one
   ``alignscore.score`` over every row. Bad input is one :class:`~alignscore.errors.InputError`
   here; an empty dataset too;
3. ``map_batches`` with a pool of ``concurrency`` actors, each holding one scorer (the model
   loaded once per actor, the weights handed to it), scores batches of ``batch_size`` rows.

Every output row is its input row (every column kept: ids travel with their scores) plus a
column per metric, ``best_ref`` (the index of the best reference) where the reference column
holds lists, and ``signature``. Ray retries the batch of an actor that dies (actors are
restarted); a batch's rows are emitted once, when its task succeeds. Ray Data does not keep
the input's order unless ``DataContext.get_current().execution_options.preserve_order`` is set:
join on an id column, not on positions.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterator

from ..combination import Combination, CombinedScorer, combination_in, scorers_of
from ..errors import ConfigError, InputError, describe
from ..lm import UnreadableTexts
from ..config import RunSpec, build, run_spec
from ..scorer import Scorer
from ..scores import Scores
from ..signature import Signature
from ..stream import count_texts, frozen_weighting, with_weighting
from ..weighting.base import Weighting, WeightState

if TYPE_CHECKING:
    import pyarrow
    import ray.data

__all__ = ["Job", "ScoreBatches", "prepare", "run", "score_dataset", "score_pairs"]

#: the columns every output row gets besides the metrics (``best_ref`` with several references)
SIGNATURE, BEST_REF = "signature", "best_ref"
#: rows per task of the first pass (small blocks read together: each task builds the run's tokenizers)
SURVEY_ROWS = 8192


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data is the part used
    except ImportError:
        raise ConfigError("scoring a Ray Dataset needs Ray Data: pip install 'alignscore[ray]'") from None
    return ray


@dataclass(frozen=True)
class Job:
    """What every actor needs: ``what`` is scored (a run's spec, or a combination of runs), each part's
    weighting fitted on the whole dataset (``weightings``: its weights, computed once by the
    driver; a run has one part), the input's column names, whether references come as lists
    (``several``), the columns scoring adds (``metrics``), the run's ``signature`` and whether the
    reference column holds each candidate's source (``sources``: scored against it, reference-free)."""

    what: RunSpec | Combination
    weightings: tuple[Weighting, ...]
    cand: str
    ref: str
    several: bool
    metrics: tuple[str, ...]
    signature: Signature
    sources: bool = False

    def scorer(self) -> Scorer | CombinedScorer:
        return _with_weightings(_driver(self.what, self.sources, cache=True), self.weightings)


def _parts(what: RunSpec | Combination) -> list[RunSpec]:
    return [p.spec for p in what.parts] if isinstance(what, Combination) else [what]


def _driver(what: RunSpec | Combination, sources: bool, cache: bool = False) -> Scorer | CombinedScorer:
    """The run's scorer (a combination's parts sharing one encoder per model); without ``cache``
    the driver's and the first pass's, which read tokenizers and configurations only."""
    plain = (lambda spec: spec) if cache else (lambda spec: replace(spec, cache=None))  # noqa: E731
    if isinstance(what, Combination):
        return Combination(tuple(replace(p, spec=plain(p.spec)) for p in what.parts)).build(sources)
    return build(plain(what))


def _with_weightings(scorer: Scorer | CombinedScorer, weightings: tuple[Weighting, ...]) -> Scorer | CombinedScorer:
    parts = [with_weighting(s, w) for s, w in zip(scorers_of(scorer), weightings)]
    return CombinedScorer(scorer.combination, parts) if isinstance(scorer, CombinedScorer) else parts[0]


class ScoreBatches:
    """The actor of :func:`score_dataset`: builds the scorer once, then scores each batch
    (a ``pyarrow.Table``) and returns it with the score columns added."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.scorer = job.scorer()

    def __call__(self, batch: "pyarrow.Table") -> "pyarrow.Table":
        import pyarrow as pa

        job = self.job
        cands = batch.column(job.cand).to_pylist()
        refs = batch.column(job.ref).to_pylist()
        scores = self.scorer.score(cands, sources=refs) if job.sources else self.scorer.score(cands, refs)
        for name in job.metrics:
            batch = batch.append_column(name, pa.array(scores.metrics[name].numpy()))
        if job.several:
            batch = batch.append_column(BEST_REF, pa.array(scores.best_reference.numpy()))
        return batch.append_column(SIGNATURE, pa.array([str(scores.signature)] * len(cands), pa.string()))


def score_dataset(ds: "ray.data.Dataset", *, cand: str = "cand", ref: str = "ref", concurrency: int = 1,
                  num_gpus: float = 0, batch_size: int = 1024, sources: bool = False,
                  **options: Any) -> "ray.data.Dataset":
    """Score each row's candidate against its reference(s) on Ray actors, as ``alignscore.score``
    does with the same options in one process.

    Parameters
    ----------
    ds : a ``ray.data.Dataset`` with a text column ``cand`` and a column ``ref`` holding a text
        or a list of texts (several references) per row; any other columns are kept.
    cand, ref : the names of those columns.
    concurrency : how many actors score (each loads the model once).
    num_gpus : GPUs per actor (Ray's ``num_gpus``; 0: CPU actors).
    batch_size : rows per actor call (Ray's ``batch_size``). The encoder's own batch size (the
        ``batch_size`` option of ``alignscore score``) is set in a run file (``config=``).
    sources : the ``ref`` column holds each candidate's source (one text per row), scored
        against it as ``alignscore.score(cands, sources=...)`` does (reference-free).
    **options : the options of ``alignscore.score`` (``model=``, ``layer=``, ``idf=True``,
        ``aligner=``, ``preset=``, ``config=``, ``cache=DIR``...). ``cache``: every actor opens
        that directory on its node (a cache is safe to share between processes). A ``config=``
        that holds a combination (``[[parts]]``) scores it: the other options apply to every part.

    Returns
    -------
    A lazy ``ray.data.Dataset``: every input row with one column per metric of the composition
    (``precision``, ``recall``, ``f1`` for greedy; ``score`` for transport; a combination's
    ``combined``, ``part0``, ...), ``best_ref`` where
    ``ref`` holds lists, and the run's ``signature``. Scores equal those of one process over
    every row to float rounding (about 1e-7: batches differ), idf-S and SEP included: the
    weights are fitted on the whole dataset before any actor starts.

    Raises :class:`~alignscore.errors.InputError` (a missing column, a value that is not a text,
    an empty dataset) or :class:`~alignscore.errors.ConfigError` (bad options, Ray missing)
    before any actor starts.

    A run (docs/ray.md has it as a page, run by the docs test)::

        import ray
        ds = ray.data.from_items([{"id": 1, "cand": "a cat sat", "ref": "the cat sat down"}])
        score_dataset(ds, model="all-MiniLM-L6-v2", idf=True).take_all()
    """
    for name, value in dict(concurrency=concurrency, batch_size=batch_size).items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a whole number >= 1, not {describe(value)}")
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, (int, float)) or not num_gpus >= 0:
        raise ConfigError(f"num_gpus must be a number >= 0, not {describe(num_gpus)}")
    job = prepare(ds, combination_in(options) or run_spec(options), cand, ref, sources)
    return run(ds, job, ScoreBatches, concurrency=concurrency, num_gpus=num_gpus, batch_size=batch_size)


def prepare(ds: "ray.data.Dataset", what: RunSpec | Combination, cand: str, ref: str, sources: bool = False,
            row: str | None = None) -> Job:
    """Steps 1 and 2 of the module's docstring: the checks of the dataset and the first pass
    (Ray tasks; no actor, no model loaded), giving the :class:`Job` of the actors (``sources``:
    the ``ref`` column holds sources; ``what`` a run or a combination, whose parts each count
    their own weighting). Candidates the language model of the run cannot read raise
    :class:`~alignscore.lm.UnreadableTexts` (a ConfigError about ``lm``, as one process raises
    it), counted over every block, the first named by its 0-based number in column ``row``
    (else by its place in the blocks as the first pass returns them)."""
    _ray()
    several = _check_schema(ds, cand, ref)
    if sources and several:
        raise InputError(f"column {ref!r} holds lists of texts: a candidate has one source, a text per row")
    for spec in _parts(what):  # what needs a reference, or maps sources, refused before any task
        spec.composition.check_side(sources, spec.runtime.name)
    driver = _driver(what, sources)  # tokenizers and configurations only
    scorers = scorers_of(driver)
    counting = [s.weighting if s.weighting.depends_on_texts() else None for s in scorers]
    metrics = driver.metrics if isinstance(driver, CombinedScorer) else tuple(driver.aligner.metrics)
    taken = sorted({*metrics, SIGNATURE, *([BEST_REF] if several else [])} & set(ds.schema().names))
    if taken:
        raise InputError(f"the dataset already has the column(s) {', '.join(taken)} that scoring adds: rename "
                         "them first")
    survey = ds.map_batches(_survey, fn_kwargs={"what": what, "weightings": counting, "cand": cand, "ref": ref,
                                                "row": row, "sources": sources}, batch_size=SURVEY_ROWS,
                            batch_format="pyarrow", zero_copy_batch=True)
    rows, unread = 0, []
    states = [WeightState.empty(s.scoring_encoder().vocab_size) for s in scorers]
    for block in survey.iter_rows():
        if block["problem"]:
            raise InputError(block["problem"])
        if block["unread"] is not None:  # (model, count, first in the block, empty, its row number or None)
            model, count, first, empty, at = pickle.loads(block["unread"])
            unread.append((rows + first if at is None else at, count, empty, model))
        rows += block["rows"]
        if block["state"] is not None:
            for state, counted in zip(states, pickle.loads(block["state"])):
                if counted is not None:
                    state.merge(counted)
    if unread:  # as one process reports it: every unreadable candidate counted, the first named
        first, _, empty, model = min(unread)
        raise UnreadableTexts(model, sum(u[1] for u in unread), first, empty)
    if rows == 0:
        raise InputError("the dataset is empty: there is nothing to score")
    # weights computed here, once, as one process computes them (idf-L's corpus counted here too)
    frozen = tuple(frozen_weighting(s.weighting, state, s.scoring_encoder()) for s, state in zip(scorers, states))
    signature = _with_weightings(driver, frozen).signature(sources)
    return Job(what, frozen, cand, ref, several, metrics, signature, sources)


def run(ds: "ray.data.Dataset", job: Job, actor: type[ScoreBatches], concurrency: int = 1, num_gpus: float = 0,
        batch_size: int = 1024) -> "ray.data.Dataset":
    """Step 3: ``actor`` (:class:`ScoreBatches` or a subclass) on a pool of ``concurrency``
    actors. Ray Data restarts an actor that dies and retries the batch it held (its defaults for
    actor pools: ``max_restarts=-1``, ``max_task_retries=-1``); a batch's rows come out once,
    from the try that succeeds."""
    ray = _ray()
    return ds.map_batches(actor, fn_constructor_kwargs={"job": job}, batch_format="pyarrow", batch_size=batch_size,
                          compute=ray.data.ActorPoolStrategy(size=concurrency), num_gpus=num_gpus or None,
                          zero_copy_batch=True)


def _check_schema(ds: "ray.data.Dataset", cand: str, ref: str) -> bool:
    """Whether ``ref`` holds lists of texts (else one text per row); InputError where the
    dataset has no such columns or they hold something else (as far as the schema tells)."""
    import pyarrow as pa

    schema = ds.schema()
    if schema is None:
        raise InputError("the dataset is empty: there is nothing to score")
    names = list(schema.names)
    for what, name in (("candidate", cand), ("reference", ref)):
        if name not in names:
            raise InputError(f"the dataset has no {what} column {name!r} (its columns: {', '.join(names)}); "
                             f"name it with {'cand' if what == 'candidate' else 'ref'}=")
    types = dict(zip(names, schema.types))

    def text(t: Any) -> bool:
        return isinstance(t, pa.DataType) and (pa.types.is_string(t) or pa.types.is_large_string(t)
                                              or pa.types.is_null(t))

    if not text(types[cand]):
        raise InputError(f"column {cand!r} holds {types[cand]}, not texts (strings)")
    kind = types[ref]
    if text(kind):
        return False
    if isinstance(kind, pa.DataType) and (pa.types.is_list(kind) or pa.types.is_large_list(kind)) \
            and text(kind.value_type):
        return True
    raise InputError(f"column {ref!r} holds {kind}, not texts (strings) nor lists of texts")


def _survey(batch: "pyarrow.Table", what: RunSpec | Combination, weightings: list[Weighting | None], cand: str,
            ref: str, row: str | None = None, sources: bool = False) -> dict[str, list[Any]]:
    """One batch of the first pass (a Ray task over up to SURVEY_ROWS rows): its row count, the
    first problem with its values (or ""), the candidates a part's LM cannot read (pickled:
    model, count, first, empty, the first's ``row`` value) and what each part's weighting of
    ``weightings`` counts over it (pickled, a list with None for a part that counts nothing), as
    one row."""
    cands = batch.column(cand).to_pylist()
    refs = batch.column(ref).to_pylist()
    problem = next(_problems(cands, refs, cand, ref), "")
    unread = None
    for lm in (spec.composition.lm for spec in _parts(what)):
        if lm is None or problem or unread is not None:
            continue
        try:  # texts the LM cannot read: found before any actor loads a model
            lm.model().token_ids(cands)
        except UnreadableTexts as exc:
            at = batch.column(row)[exc.first].as_py() if row is not None and row in batch.column_names else None
            unread = pickle.dumps((exc.model, exc.count, exc.first, exc.empty, at))
    state = None
    if any(w is not None for w in weightings) and not problem and cands:
        pairs = [(cands, [[r] if isinstance(r, str) else r for r in refs])]
        scorers = scorers_of(_driver(what, sources))  # the parts of one model share its tokenizer
        state = pickle.dumps([count_texts(w, s.scoring_encoder(), pairs) if w is not None else None
                              for s, w in zip(scorers, weightings)])
    return {"rows": [len(cands)], "problem": [problem], "unread": [unread], "state": [state]}


def _problems(cands: list[Any], refs: list[Any], cand: str, ref: str) -> Iterator[str]:
    """What is wrong with the values of a block, one message per problem."""
    for c, r in zip(cands, refs):
        where = f"a row ({cand}={_short(c)}, {ref}={_short(r)})"
        group = r if isinstance(r, list) else [r]
        if not isinstance(c, str):
            yield f"{where}: its candidate is {describe(c)}, not a text (str)"
        elif not group:
            yield f"{where}: it has no reference (an empty list)"
        else:
            bad = next((t for t in group if not isinstance(t, str)), "")
            if not isinstance(bad, str):
                yield f"{where}: its reference is {describe(bad)}, not a text (str)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def score_pairs(cands: list[str], groups: list[list[str]], what: RunSpec | Combination, address: str, several: bool,
                concurrency: int = 1, num_gpus: float = 0, batch_size: int = 1024, progress: bool = True,
                sources: bool = False, label: str = "address=") -> Scores:
    """``alignscore score --ray ADDRESS``: the pairs (candidates and each one's references) as a
    Ray Dataset with a row number, scored by :func:`prepare` and :func:`run` on the cluster at
    ``address`` (``"local"``: a Ray started on this machine, stopped at the end; joined and left
    as it is when this process already runs one), collected back in input order as
    :class:`~alignscore.scores.Scores` (``best_reference`` where ``several``; ``empty`` is not
    collected and reads False); ``what`` a run or a combination. ``sources``: each candidate's one
    text of ``groups`` is its source;
    ``label``: the option ``address`` as the caller names it (for errors)."""
    import logging

    import torch

    ray = _ray()
    if not cands:
        raise InputError("there are no candidates: there is nothing to score")
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=progress,
                     logging_level=logging.WARNING if progress else logging.ERROR)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"{label} {address}: cannot join the Ray cluster: {exc}") from None
    try:
        if not progress:
            logging.getLogger("ray.data").setLevel(logging.ERROR)
            ray.data.DataContext.get_current().enable_progress_bars = False
        rows = [{"row": i, "cand": c, "ref": g if several else g[0]} for i, (c, g) in enumerate(zip(cands, groups))]
        ds = ray.data.from_items(rows)
        job = prepare(ds, what, "cand", "ref", sources, row="row")
        scored = run(ds, job, ScoreBatches, concurrency=concurrency, num_gpus=num_gpus, batch_size=batch_size)
        n = len(rows)
        metrics: dict[str, torch.Tensor] = {}  # each in the dtype it was scored in (a combination's: float64)
        best = torch.zeros(n, dtype=torch.long)
        seen = torch.zeros(n, dtype=torch.long)
        for batch in scored.iter_batches(batch_format="pyarrow", batch_size=None):
            where = torch.tensor(batch.column("row").to_numpy())
            seen.index_add_(0, where, torch.ones_like(where))
            for m in job.metrics:
                values = torch.from_numpy(batch.column(m).to_numpy().copy())
                metrics.setdefault(m, torch.zeros(n, dtype=values.dtype))[where] = values
            if several:
                best[where] = torch.tensor(batch.column(BEST_REF).to_numpy(), dtype=torch.long)
        if not bool((seen == 1).all()):  # never write a row twice or leave one out
            raise ConfigError(f"Ray returned {int(seen.sum())} rows for {n} candidates")
        return Scores(metrics, best, torch.zeros(n, dtype=torch.bool), job.signature)
    finally:
        if started:
            ray.shutdown()
