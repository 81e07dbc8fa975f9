"""``alignscore.tune``: the whole search as one library call, from the data and the space to
the selection, its estimate and (with an output folder) the files ``alignscore tune`` writes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..config import build
from ..config.compile import Source, sources_of
from ..errors import ConfigError
from ..textio import check_output_folder
from ..weighting.schemes import Corpus, IdfL
from ..evaluation.challenge import check_sources, read_items
from ..evaluation.reference_free import (against_sources as against_sources_of, check_remaps, item_remaps, remaps_for,
                              split_remap)
from .space import load_space
from ..evaluation.wmt import LangPair, load_daseg
from .book import Entry
from .budget import DEFAULT_BUDGET_MIN, HEADROOM, Pace, Plan, check_budget, plan_search, probe_seconds
from .cost import Probe, measure
from .crossval import SearchRun, search
from ..evaluation.objective import Objective
from .outputs import OUTPUT_FILES, output_paths, summary, write_outputs
from .prepare import challenge_accuracy, prepare
from .combine import Proposal, propose, write as write_combination

WRITING_SECONDS = 5.0  # kept back from the budget for the outputs


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


def tune(data: str | Path, space: str | Path | None = None, *, budget: float | None = None,
         objective: str = "correlation", challenge: str | Path | None = None, holdout: str | Path | None = None,
         output: str | Path | None = None, lang_pairs: str | Sequence[str] = (), year: str | None = None,
         idf_corpus: str | None = None, max_compositions: int = 5000, bootstrap: int = 1000, seed: int = 0,
         skip_missing: bool = False, progress: bool = False, log: Callable[[str], None] | None = None,
         command: str | None = None, sources: Sequence[Source] = (), against_sources: bool = False,
         clock: Callable[[], float] = time.perf_counter, combine: int | None = None, **options: Any) -> TuneResult:
    """Search the runs of a space for the one that correlates best with the human judgments
    of a WMT DAseg folder, within a time budget, with nested cross-validated estimates.

    Parameters
    ----------
    data : str or Path
        The DAseg folder searched on.
    space : str or Path, optional
        A space file (TOML); default: the packaged space.
    budget : float, optional
        Minutes the whole call may take (a finite number > 0). Default: 30, and where the space
        does not fit it the search screens harder and says so; a budget given is refused where
        even the cheapest schedule does not fit it.
    objective : str
        ``correlation``, ``correlation + W * accuracy[CATEGORY]`` or
        ``correlation, accuracy[CATEGORY] >= X`` (with ``challenge``).
    challenge : str or Path, optional
        A challenge set (JSON lines) for an objective on its accuracy.
    holdout : str or Path, optional
        Another DAseg folder the selection and the published configurations are scored on.
    output : str or Path, optional
        The folder to write best.toml, the leaderboard, the folds and the chart into (against
        sources with remappings, also ``best.<lang>.toml``: best.toml with that source
        language's remapping).
    lang_pairs : str or sequence of str
        The language pairs searched on (``"cs-en,de-en"``; default: all).
    year : str, optional
        Which year, where the folder holds several.
    idf_corpus : str, optional
        The idf-L corpus (a file or a template); default: the data's.
    max_compositions : int
        A space with more runs is refused.
    bootstrap : int
        Resamples of the intervals.
    seed : int
        Seed of the samples, the resamples and any sample of the space.
    skip_missing : bool
        Leave out the runs of a model not on this machine (else: an error naming it).
    progress : bool
        Progress bars on stderr.
    log : callable, optional
        Takes each line of progress.
    command : str, optional
        The command line, for the leaderboard.
    sources : sequence of Source
        Options of every run as compiled sources (the command line's flags), below ``options``.
    against_sources : bool
        Score each MT output against its source (``DAseg.*.source.*``) instead of its reference,
        as ``alignscore score --sources`` does (:mod:`~alignscore.evaluation.reference_free`);
        the remapping option then names one file or a folder of ``<lang>.remap`` files, one
        per source language of the data. The ``challenge`` items are scored against their
        ``source`` field, as ``alignscore challenge --sources`` does (with a folder, each item
        with the remapping of its ``lp`` field's source language).
    clock : callable
        The clock the budget is kept on.
    combine : int, optional
        After the search, propose the best combination of at most this many (>= 2) of the
        leaderboard's runs, kept as best.toml only where its nested estimate beats the selection's
        (:mod:`~alignscore.tune.combine`).
    **options
        Any option of :func:`alignscore.score` (``model=``, ``batch_size=``, ...) for every run,
        below what the space chooses.

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
    alignscore.errors.ConfigError: budget=-1: the minutes a search may take, a finite number > 0
    """
    start = clock()
    say = log or (lambda _msg: None)
    flag = any(s.style == "flag" for s in sources)
    label = "--budget" if flag else "budget="  # as the user named it
    minutes = check_budget(budget, label) if budget is not None else DEFAULT_BUDGET_MIN
    wanted = Objective.given(objective, challenge)
    if combine is not None:
        _check_combine(combine, against_sources, wanted, flag)
    parsed = load_space(space)
    flags, remap = split_remap([*sources, *sources_of(options)]) if against_sources else \
        ([*sources, *sources_of(options)], None)
    side = "--sources" if flag else "against_sources="
    wanted_pairs = [p for item in ([lang_pairs] if isinstance(lang_pairs, str) else lang_pairs)
                    for p in str(item).split(",") if p.strip()]
    pairs = load_daseg(data, wanted_pairs or None, year=year, idf_corpus=idf_corpus)
    held = load_daseg(holdout) if holdout is not None else []
    if against_sources:  # a language without a remapping is refused here, before any model loads
        remaps = remaps_for(*remap, [lp.src for lp in [*pairs, *held]]) if remap is not None else None
        pairs, held = (against_sources_of(p, remaps, side, idf_corpus is not None) for p in (pairs, held))
    if output is not None:  # best.<lang>.toml beside best.toml for each source language remapped
        names = [p.name for p in output_paths(output, holdout is not None, True,
                                              {lp.src for lp in pairs if lp.remap is not None}).values()]
        check_output_folder(output, names + (["single.toml", "combination.toml"] if combine else []),
                            [space, challenge, idf_corpus])
    items = read_items(challenge) if challenge is not None else []
    if items and against_sources:  # each item against its source, with its language's remapping, as challenge does
        check_sources(items, str(challenge), side)
    item_remap = item_remaps(items, *remap, str(challenge)) if items and remap is not None else None
    corpus = {IdfL.corpus_setting(): data_corpus(data, year, pairs, against_sources)}
    missing = _missing(parsed.models(flags))
    skip = set(missing) if skip_missing else set()
    candidates = parsed.candidates(flags, max_compositions, corpus, skip)  # compiled: nothing loaded yet
    runs = parsed.published_compiled(flags, corpus, skip)
    if missing and not skip_missing:  # after every value is checked, before any model is loaded
        model, where = next(iter(missing.items()))
        raise ConfigError(f"{where}: no such model folder or file, nor {model!r} in the Hugging Face cache "
                          "(--skip-missing leaves its runs out)")
    left_out = [f"{m} ({where}): not on this machine, its runs left out" for m, where in missing.items()]
    for line in left_out:
        say(line)
    published = {}
    for name, (spec, provenance) in runs.items():
        try:
            # a published configuration this model cannot run (no default layer) is left out
            build(spec, provenance=provenance).composition.check_side(against_sources)
            published[name] = spec
        except ConfigError as exc:
            left_out.append(f"{name}: left out ({exc})")
            say(left_out[-1])
    # every run checked against its model's configuration (and its remapping, against sources)
    entries, scorers = prepare(candidates, published, against_sources)
    if remap is not None:
        check_remaps([e.composition for e in entries], scorers, [lp.remap for lp in [*pairs, *held]]
                     + list(item_remap or ()), remap[1])
    if items:
        say(f"accuracy of {len(entries)} runs on {len(items)} challenge items")
        challenge_accuracy(entries, scorers, items, str(wanted.category), against_sources, item_remap)
    budget_s = minutes * 60
    threads = torch.get_num_threads()
    try:  # the probe chooses torch's threads for the search; the caller's are restored
        probe = measure(entries, scorers, pairs, probe_seconds(budget_s), progress, clock)
        left = budget_s - (clock() - start) - WRITING_SECONDS
        sizes = [len(lp) for lp in pairs]
        plan = plan_search(probe.cost, sizes, left, budget is not None, seed, label, minutes, HEADROOM)
        if plan.note:
            say(plan.note)
        say(f"{parsed.path}: {len(entries) if plan.runs is None else len(plan.runs)} runs x {sum(sizes)} segments; "
            f"{plan.schedule}; about {plan.seconds / 60:.1f} min (measured here in {probe.seconds:.0f} s, "
            f"{probe.threads} thread{'s' if probe.threads > 1 else ''})")
        run = search(entries, scorers, pairs, plan.schedule, wanted, held, str(holdout) if holdout else None,
                     bootstrap, seed, progress, say, probe.cost, plan.runs, Pace(plan.levels, left, clock))
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
        result.proposal = propose(run, pairs, combine, held, resamples=bootstrap, seed=seed, say=say)
        if output is not None:
            result.written.update(write_combination(output, run, result.proposal, combine))
    result.seconds = clock() - start
    return result


def _check_combine(most: object, against_sources: bool, wanted: Objective, flag: bool) -> None:
    """Refuse a ``combine`` that is not an integer >= 2, or one beside what it does not handle yet."""
    label = "--combine" if flag else "combine="
    if isinstance(most, bool) or not isinstance(most, int) or most < 2:
        raise ConfigError(f"{label}: the most runs a combination has, an integer >= 2, not {most!r}")
    if against_sources or wanted.uses_challenge:
        raise ConfigError(f"{label}: combines runs scored against references on the correlation only (not with "
                          f"{'--sources' if flag else 'against_sources='} or a challenge objective)")


def _missing(models: dict[str, str]) -> dict[str, str]:
    """The models not on this machine, each with where it is named."""
    from ..config.plan import model_available

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


__all__ = ["TuneResult", "data_corpus", "tune"]
