"""``alignscore.tune``: the whole search as one library call, from the data and the space to
the selection, its estimate and (with an output folder) the files ``alignscore tune`` writes."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from ..config import Provenance, build
from ..config.compile import Source, sources_of
from ..config.sources import input_files
from ..errors import ConfigError
from ..lm import check_readable
from ..scorer import Scorer
from ..settings import SettingError, setting
from ..textio import check_output_folder
from ..weighting.schemes import Corpus, IdfL
from ..evaluation.challenge import check_sources, read_items
from ..evaluation.reference_free import (against_sources as against_sources_of, check_remaps, item_remaps, remaps_for,
                              split_remap)
from .space import load_space
from ..evaluation.wmt import LangPair, load_daseg
from .book import Entry
from .budget import DEFAULT_BUDGET_MIN, HEADROOM, Pace, Plan, plan_search, probe_seconds
from .cost import Probe, measure
from .crossval import SearchRun, search
from ..evaluation.objective import JudgedOptions, Objective
from .outputs import OUTPUT_FILES, output_paths, summary, write_outputs
from .prepare import challenge_accuracy, prepare
from .combine import CombineCost, Proposal, propose, write as write_combination

WRITING_SECONDS = 5.0  # kept back from the budget for the outputs
#: the most of the time left after the probe that ``combine`` keeps: its pool is bounded to fit it
#: rather than the search starved for the dearest runs of the space, which rarely lead the board
COMBINE_SHARE = 0.25


@dataclass
class TuneResult:
    """What :func:`tune` did: the ``run`` (selection, leaderboard, estimates), the ``plan`` it
    followed, the cost ``probe``, the files ``written`` (none without an output folder), what
    was ``left_out`` (published configurations the model cannot run, runs of missing models) and
    the ``seconds`` it took in all.

    Parameters
    ----------
    run : SearchRun
        The selection, the leaderboard and the estimates; :attr:`best` is the selected entry.
    plan : Plan
        The schedule the search followed within its budget.
    probe : Probe
        The measured cost the plan was made from.
    written : dict of str to Path
        The files written, by kind (empty without an output folder).
    left_out : list of str
        What was not run, each with the reason.
    seconds : float
        Wall time of the whole call.
    proposal : Proposal, optional
        With ``combine``: the combination proposed (:mod:`~alignscore.tune.combine`).

    Examples
    --------
    Made by :func:`tune` only (a search loads a model):

    >>> from dataclasses import fields
    >>> [f.name for f in fields(TuneResult)]
    ['run', 'plan', 'probe', 'written', 'left_out', 'seconds', 'proposal']
    """

    run: SearchRun
    plan: Plan
    probe: Probe
    written: dict[str, Path] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    seconds: float = 0.0
    proposal: Proposal | None = None

    @property
    def best(self) -> Entry:
        """The selected run's entry (its ``spec`` is what best.toml holds)."""
        return self.run.entries[self.run.best]

    def summary(self) -> list[str]:
        """The lines that say what was selected and how well it generalises."""
        return summary(self.run)


@dataclass(frozen=True)
class TuneOptions(JudgedOptions):
    """The options of a search (``alignscore tune``'s flags and argument, :func:`tune`'s
    keywords): besides the data and the objective
    (:class:`~alignscore.evaluation.objective.JudgedOptions`), the space, its budget and how its
    runs are scored.

    Examples
    --------
    >>> TuneOptions.given({"data": "wmt", "budget": -1})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: budget=: expected a number > 0, not -1.0
    """

    space: str | os.PathLike | None = setting(None, option=False, help=(  # type: ignore[type-arg]
        "A space file (TOML); default: the packaged space."))
    budget: float | None = setting(None, gt=0, metavar="MINUTES", help=(
        f"Minutes the whole command may take on this machine (default {DEFAULT_BUDGET_MIN:g}): the full grid when it "
        "fits, else the successive-halving schedule that scores the most segments within it (a cost measured here "
        "first, in at most a tenth of it). A --budget that even the cheapest schedule exceeds is refused; the default "
        "one screens harder instead, and says so."))
    against_sources: bool = setting(False, flag="sources", help=(
        "Score each MT output against its source (DAseg.*.source.*; --remap: a file, or a folder of <lang>.remap "
        "files), and --challenge items against their 'source' field, not against the reference: reference-free, as "
        "'alignscore score --sources' does (--remap, --lm apply)."))
    idf_corpus: str | None = setting(None, help=(
        "The idf-L corpus: a file, or a template like 'refs/newstest{year}-{src}{tgt}-ref.{tgt}' (one corpus: every "
        "language pair's, together). Default: the official full reference files next to the data, else every "
        "reference of the --data folder."))
    skip_missing: bool = setting(False, help=(
        "Leave out the runs of a model that is not on this machine (else: an error naming it)."))
    max_compositions: int = setting(5000, ge=1, help="Refuse a space with more runs than this.")
    output: str | os.PathLike | None = setting(None, short="-o", metavar="DIR", help=(  # type: ignore[type-arg]
        "Output folder (the command's default: tune-out; from Python, none: nothing written)."))
    combine: int | None = setting(None, ge=2, metavar="K", help=(
        "After the search, propose the best combination of at most K of the leaderboard's runs (weights fitted, "
        "docs/combinations.md); best.toml only where its nested estimate beats the single selection's."))


def tune(data: str | Path | TuneOptions, space: str | Path | None = None, *, progress: bool = False,
         log: Callable[[str], None] | None = None, command: str | None = None, sources: Sequence[Source] = (),
         clock: Callable[[], float] = time.perf_counter, **keywords: Any) -> TuneResult:
    """Search the runs of a space for the one that correlates best with the human judgments
    of a WMT DAseg folder, within a time budget, with nested cross-validated estimates.

    Parameters
    ----------
    data : str or Path or TuneOptions
        The DAseg folder searched on, or the whole :class:`TuneOptions`.
    space : str or Path, optional
        A space file (TOML); default: the packaged space.
    progress : bool
        Progress bars on stderr.
    log : callable, optional
        Takes each line of progress.
    command : str, optional
        The command line, for the leaderboard.
    sources : sequence of Source
        Options of every run as compiled sources (the command line's flags), below ``keywords``.
    clock : callable
        The clock the budget is kept on.
    **keywords
        The fields of :class:`TuneOptions`: ``budget`` (minutes the whole call may take; default
        30, and where the space does not fit it the search screens harder and says so; a budget
        given is refused where even the cheapest schedule does not fit it), ``objective`` and
        ``challenge``, ``holdout``, ``output`` (best.toml, the leaderboard, the folds and the
        chart; against sources with remappings, also ``best.<lang>.toml``), ``lang_pairs`` (a
        list or a comma list), ``year``, ``idf_corpus``, ``max_compositions``, ``bootstrap``,
        ``seed``, ``skip_missing``, ``combine`` (after the search, the best combination of at most
        that many of the leaderboard's runs, :mod:`~alignscore.tune.combine`), ``against_sources``
        (each MT output against its source, ``DAseg.*.source.*``, as ``alignscore score
        --sources`` does; the remapping option then names one file or a folder of ``<lang>.remap``
        files; challenge items against their ``source`` field); and any option of :func:`alignscore.score` (``model=``,
        ``batch_size=``, ...) for every run, below what the space chooses.

    Returns
    -------
    TuneResult
        The selection and its estimates, the plan followed and the files written.

    Raises
    ------
    ConfigError
        Bad input (before anything loads), a missing model, or an explicit budget that does not
        fit.

    Examples
    --------
    Options are checked before any model loads or any file is read:

    >>> tune("data/wmt16", budget=-1)
    Traceback (most recent call last):
    alignscore.errors.ConfigError: budget=: expected a number > 0, not -1.0
    """
    own = {k: keywords.pop(k) for k in [k for k in keywords if k in TuneOptions.names()]}
    if isinstance(data, TuneOptions) and (own or space is not None):
        raise ConfigError(f"{next(iter(own), 'space')}=: given beside a TuneOptions; set it there")
    opts = data if isinstance(data, TuneOptions) else TuneOptions.given({"data": data, "space": space, **own})
    try:
        return _tune(opts, [*sources, *sources_of(keywords)], progress, log, command, clock)
    except SettingError as exc:  # a search's own option, named as the caller gave it
        raise opts.relabel(exc) if exc.field in TuneOptions.names() else exc from None


def _tune(opts: TuneOptions, sources: Sequence[Source], progress: bool, log: Callable[[str], None] | None,
          command: str | None, clock: Callable[[], float]) -> TuneResult:
    start = clock()
    say = log or (lambda _msg: None)
    data, space, challenge, holdout, output = opts.data, opts.space, opts.challenge, opts.holdout, opts.output
    against_sources, idf_corpus, year, seed = opts.against_sources, opts.idf_corpus, opts.year, opts.seed
    minutes = DEFAULT_BUDGET_MIN if opts.budget is None else opts.budget
    wanted = opts.wanted
    combine = opts.combine
    if combine is not None:
        _check_combine(against_sources, wanted, opts.label)
    parsed = load_space(space)
    flags, remap = split_remap(sources) if against_sources else (list(sources), None)
    side = opts.label("against_sources")
    pairs = load_daseg(data, opts.lang_pairs, year=year, idf_corpus=idf_corpus)
    held = load_daseg(holdout) if holdout is not None else []
    if against_sources:  # a language without a remapping is refused here, before any model loads
        remaps = remaps_for(*remap, [lp.src for lp in [*pairs, *held]]) if remap is not None else None
        pairs, held = (against_sources_of(p, remaps, side, idf_corpus is not None) for p in (pairs, held))
    if output is not None:  # best.<lang>.toml beside best.toml for each source language remapped
        names = [p.name for p in output_paths(output, holdout is not None, True,
                                              {lp.src for lp in pairs if lp.remap is not None}).values()]
        more = ["single.toml", "combination.toml"] if combine else []
        check_output_folder(output, names + more, [space, challenge, idf_corpus, *input_files(flags)])
    items = read_items(challenge) if challenge is not None else []
    if items and against_sources:  # each item against its source, with its language's remapping, as challenge does
        check_sources(items, str(challenge), side)
    item_remap = item_remaps(items, *remap, str(challenge)) if items and remap is not None else None
    corpus = {IdfL.corpus_setting(): data_corpus(data, year, pairs, against_sources)}
    missing = _missing(parsed.models(flags))
    skip = set(missing) if opts.skip_missing else set()
    candidates = parsed.candidates(flags, opts.max_compositions, corpus, skip)  # compiled: nothing loaded yet
    runs = parsed.published_compiled(flags, corpus, skip)
    if missing and not opts.skip_missing:  # after every value is checked, before any model is loaded
        model, where = next(iter(missing.items()))
        raise ConfigError(f"{where}: no such model folder or file, nor {model!r} in the Hugging Face cache "
                          f"({opts.label('skip_missing')} leaves its runs out)")
    left_out = [f"{m} ({where}): not on this machine, its runs left out" for m, where in missing.items()]
    for line in left_out:
        say(line)
    published = {}
    for name, (spec, provenance) in runs.items():
        try:
            # a published configuration this model cannot run (no default layer) is left out
            build(spec, provenance=provenance).composition.check_side(against_sources, spec.runtime.name)
            published[name] = spec
        except ConfigError as exc:
            left_out.append(f"{name}: left out ({exc})")
            say(left_out[-1])
    # every run checked against its model's configuration (and its remapping, against sources)
    entries, scorers = prepare(candidates, published, against_sources)
    if remap is not None:
        check_remaps([e.composition for e in entries], scorers, [lp.remap for lp in [*pairs, *held]]
                     + list(item_remap or ()), remap[1])
    given = {id(c.spec): c.provenance for c in candidates} | {id(spec): runs[n][1] for n, spec in published.items()}
    texts = [(lp.name, lp.candidates) for lp in [*pairs, *held]]
    if items and against_sources:  # the items' good and bad are mixed with the LM term too
        texts += [(f"{challenge} ({side})", [getattr(item, side) for item in items]) for side in ("good", "bad")]
    _check_lm_reads(entries, scorers, given, texts)
    if items:
        say(f"accuracy of {len(entries)} runs on {len(items)} challenge items")
        challenge_accuracy(entries, scorers, items, str(wanted.category), against_sources, item_remap)
    budget_s = minutes * 60
    threads = torch.get_num_threads()
    try:  # the probe chooses torch's threads for the search; the caller's are restored
        probe = measure(entries, scorers, pairs, probe_seconds(budget_s), progress, clock)
        left = budget_s - (clock() - start) - WRITING_SECONDS
        sizes = [len(lp) for lp in pairs]
        kept = 0.0
        if combine is not None:  # the combination comes after the search, within the same budget
            combining = CombineCost.measure(probe.cost, sizes, [len(lp) for lp in held], combine, clock)
            kept = max(min(combining.worst() / HEADROOM, COMBINE_SHARE * left), 0.0)
            if combining.least() > kept * HEADROOM:  # not even the two cheapest runs: refused before the search
                given = f"{opts.label('budget')} {minutes:g}" + (" (the default)" if opts.budget is None else "")
                raise ConfigError(f"{given}: too short for a combination on this data "
                                  f"(scoring two runs again takes about {combining.least() / 60:.1f} min; at most "
                                  f"{kept / 60:.1f} min of it kept for {opts.label('combine')} {combine})",
                                  ("budget",))
            left -= kept  # as the search's own estimate, with room for running over it
            say(f"keeping about {kept / 60:.1f} min of the budget for {opts.label('combine')} {combine}")
        try:
            plan = plan_search(probe.cost, sizes, left, opts.budget is not None, seed, opts.label("budget"),
                               minutes, HEADROOM)
        except ConfigError as exc:
            if not kept:
                raise
            raise ConfigError(f"{exc} (about {kept / 60:.1f} min of it kept for {opts.label('combine')} "
                              f"{combine})", exc.options) from None
        if plan.note:
            say(plan.note)
        say(f"{parsed.path}: {len(entries) if plan.runs is None else len(plan.runs)} runs x {sum(sizes)} segments; "
            f"{plan.schedule}; about {plan.seconds / 60:.1f} min (measured here in {probe.seconds:.0f} s, "
            f"{probe.threads} thread{'s' if probe.threads > 1 else ''})")
        run = search(entries, scorers, pairs, plan.schedule, wanted, held, str(holdout) if holdout else None,
                     opts.bootstrap, seed, progress, say, probe.cost, plan.runs, Pace(plan.levels, left, clock))
    finally:
        torch.set_num_threads(threads)
    run.estimated_seconds = plan.seconds
    run.seconds["probe"] = probe.seconds
    result = TuneResult(run, plan, probe, left_out=left_out)
    if output is not None:
        say("writing outputs")
        run.seconds["wall"] = clock() - start
        result.written = write_outputs(output, run, str(data), command)
    if combine is not None:
        result.proposal = propose(run, pairs, combine, held, resamples=opts.bootstrap, seed=seed, say=say,
                                  fits=lambda pool: combining.seconds(pool) <= kept * HEADROOM)
        if output is not None:
            result.written.update(write_combination(output, run, result.proposal, combine))
    result.seconds = clock() - start
    return result


def _check_lm_reads(entries: Sequence[Entry], scorers: Sequence[Scorer], provenance: Mapping[int, Provenance],
                    texts: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Refuse, before any model loads, a run's language model that cannot read the candidates
    ``texts`` (each with where they come from: a language pair, a challenge set's good or bad),
    naming the LM as the run gave it (``--lm``, ``space.toml:3: lm[0]``) and where."""
    seen = set()
    for entry, scorer in zip(entries, scorers):
        lm = entry.composition.lm
        if lm is None or lm.lm in seen:
            continue
        seen.add(lm.lm)
        for where, some in texts:
            check_readable(lm, some, provenance.get(id(entry.spec)), where, scorer.runtime.device,
                           scorer.runtime.batch_size)


def _check_combine(against_sources: bool, wanted: Objective, label: Callable[[str], str]) -> None:
    """Refuse a ``combine`` beside what it does not handle yet."""
    if against_sources or wanted.uses_challenge:
        raise ConfigError(f"{label('combine')}: combines runs scored against references on the correlation only (not "
                          f"with {label('against_sources')} or a challenge objective)")


def _missing(models: dict[str, str]) -> dict[str, str]:
    """The models not on this machine, each with where it is named."""
    from ..encoders.layers import model_available

    return {m: where for m, where in models.items() if not model_available(m)}


def data_corpus(data: str | Path, year: str | None, pairs: list[LangPair], sources: bool = False) -> Corpus:
    """The idf-L corpus of a search: every language pair's own corpus together where each has
    one, else every reference of the data folder (``sources``: every source, scored against them).

    Parameters
    ----------
    data : str or Path
        The DAseg folder.
    year : str, optional
        Its year.
    pairs : list of LangPair
        The pairs searched on.
    sources : bool
        The search scores against sources.

    Returns
    -------
    Corpus
    """
    if all(lp.idf_corpus is not None for lp in pairs):
        texts = [t for lp in pairs for t in lp.idf_corpus or ()]
    else:
        texts = [t for lp in load_daseg(str(data), year=year)
                 for t in ((lp.sources or []) if sources else lp.references)]
    # named as the file tune writes it to beside best.toml, so that the signatures agree
    return Corpus(list(dict.fromkeys(texts)), OUTPUT_FILES["corpus"])


__all__ = ["TuneOptions", "TuneResult", "data_corpus", "tune"]
