"""Many runs over one encoding, planned once.

:func:`plan_runs` builds each run (or skips it, with the reason), checked against its model
before anything is encoded; runs whose encoder specs and devices are equal share one encoder.
Every error of every run is collected before any is raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..encoders import Encoder, encoder_of
from ..encoders.layers import model_available
from ..errors import AlignScoreError, ConfigError, ConfigErrors, ModelLoadError
from ..scorer import Scorer, by_encoder
from ..settings import keyword
from .build import build
from .compile import Compiled, Provenance, Source, compile_labelled, merge
from .schema import MODEL_OPTIONS
from .spec import RunSpec

MODEL = MODEL_OPTIONS[0]


def not_here(model: str, label: Callable[[str], str] = keyword) -> str:
    """Why a run of ``model`` is skipped when the model is not on this machine (``label`` names
    the caller's options).

    >>> not_here("org/model")
    "model 'org/model' is not on this machine (nothing is downloaded without download=)"
    """
    return f"model {model!r} is not on this machine (nothing is downloaded without {label('download')})"


@dataclass(frozen=True)
class RunSources:
    """A run still to compile (:func:`~alignscore.config.compile.compile_run`'s arguments).

    Attributes
    ----------
    sources : its sources, lowest first.
    data : settings the data provide, where its parts take them (an idf-L corpus).

    Examples
    --------
    >>> from alignscore.config import sources_of
    >>> plan_runs([RunSources(sources_of({"aligner": "wmd", "n_gram": 0}))])
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: n_gram=: expected an integer >= 1 or one of sentence, not 0
    """

    sources: Sequence[Source]
    data: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PlannedRun:
    """One run of a plan: its spec (None where it could not be compiled) and its scorer, or why
    it is skipped."""

    spec: RunSpec | None
    scorer: Scorer | None = None
    skipped: str | None = None


@dataclass
class RunPlan:
    """The outcome of :func:`plan_runs`.

    Attributes
    ----------
    runs : a :class:`PlannedRun` per run, in order.

    Examples
    --------
    >>> from alignscore.config import run_spec
    >>> plan = plan_runs([run_spec({"model": "all-MiniLM-L6-v2", "aligner": a}) for a in ("greedy", "wmd")])
    >>> plan.groups(), plan.scorers()[0].encoder is plan.scorers()[1].encoder
    ([[0, 1]], True)
    """

    runs: list[PlannedRun] = field(default_factory=list)

    def scorers(self) -> list[Scorer]:
        """The scorers of the runs that were built, in order."""
        return [r.scorer for r in self.runs if r.scorer is not None]

    def groups(self) -> list[list[int]]:
        """The runs that were built, by encoder: the positions of the runs that share one
        encoder object, in order, the groups in the order of their first run."""
        built = [k for k, r in enumerate(self.runs) if r.scorer is not None]
        return [[built[i] for i in group] for group in by_encoder(self.scorers())]


def plan_runs(runs: Sequence[RunSpec | Compiled | RunSources], *, skip_missing: bool = False,
              download: bool = True, sources: bool = False, label: Callable[[str], str] = keyword) -> RunPlan:
    """Build every run, one encoder per encoder spec and device, and check each against its
    model (its configuration and tokenizer, not its weights) before anything is encoded.

    Parameters
    ----------
    runs : run specs (with their provenance, :class:`~alignscore.config.compile.Compiled`, for
        errors naming the options as given), or :class:`RunSources` to compile (a grid's cells):
        their option errors are collected like the others.
    skip_missing : skip, with the reason, the runs whose model is not on this machine or cannot
        be loaded, instead of counting them as errors.
    download : let the encoder fetch a model that is not on this machine (as
        :func:`~alignscore.config.build.build` does); without it such a model is missing before
        anything is loaded.
    sources : the runs score candidates against sources (reference-free), not references: each
        run's composition is checked for that side (:meth:`Composition.check_side`).
    label : how the caller names ``download`` and ``skip_missing`` (default: as keywords).

    Returns
    -------
    RunPlan
        A :class:`PlannedRun` per run, in order.

    Raises
    ------
    ConfigError
        Every error of every run, each once, in run order: one as itself, several as
        :class:`~alignscore.errors.ConfigErrors`. A model that cannot be loaded
        (:class:`~alignscore.errors.ModelLoadError`) is one of them unless ``skip_missing``.

    Examples
    --------
    >>> from alignscore.config import run_spec
    >>> plan = plan_runs([run_spec({"model": "no-such-org/no-such-model"})], skip_missing=True, download=False)
    >>> plan.runs[0].skipped, plan.scorers()
    ("model 'no-such-org/no-such-model' is not on this machine (nothing is downloaded without download=)", [])
    """
    encoders: dict[Any, Encoder | AlignScoreError] = {}  # by encoder spec and device: one model loaded
    planned = [_plan(run, encoders, download, sources, label) for run in runs]
    unique = list({str(e): e for run, e in planned
                   if e is not None and not (skip_missing and run.skipped is not None)}.values())
    if unique:
        raise unique[0] if len(unique) == 1 else ConfigErrors(unique)
    return RunPlan([run for run, _ in planned])


def _plan(run: RunSpec | Compiled | RunSources, encoders: dict[Any, Encoder | AlignScoreError], download: bool,
          sources: bool, label: Callable[[str], str]) -> tuple[PlannedRun, AlignScoreError | None]:
    """One run built, or skipped (the error it is unless missing models are skipped), or failed."""
    missing = (lambda name: False) if download else (lambda name: not model_available(name))
    if isinstance(run, RunSources):
        try:
            run = compile_labelled(run.sources, run.data)
        except ConfigError as exc:
            model = _named_model(run.sources)
            if model is not None and MODEL in exc.options and missing(model):
                return _missing(model, str(exc), label)
            return PlannedRun(None), exc  # an option error, or a model path that cannot be fetched either
    spec, provenance = run if isinstance(run, Compiled) else (run, Provenance())
    try:
        spec.composition.check_side(sources, spec.runtime.name)
    except ConfigError as exc:
        return PlannedRun(None), provenance.relabel(exc)
    if missing(spec.encoder.model):
        return _missing(spec.encoder.model, f"{provenance.name(MODEL)}: {not_here(spec.encoder.model, label)}", label,
                        spec)
    key = (spec.encoder, spec.runtime.device)
    try:
        if key not in encoders:
            encoders[key] = encoder_of(spec.encoder, spec.runtime.device, spec.runtime.name)  # nothing loaded yet
        encoder = encoders[key]
        if isinstance(encoder, AlignScoreError):
            raise encoder
        return PlannedRun(spec, build(spec, encoder, provenance=provenance)), None
    except ModelLoadError as exc:
        encoders[key] = exc  # one that fails fails every run of it
        return PlannedRun(spec, skipped=str(exc)), exc
    except ConfigError as exc:
        return PlannedRun(spec), exc


def _named_model(sources: Sequence[Source]) -> str | None:
    """The model the sources name, or None (none named, or the sources do not merge)."""
    try:
        given = merge(sources).given(MODEL)
    except ConfigError:
        return None
    return str(given.value) if given is not None else None


def _missing(model: str, why: str, label: Callable[[str], str],
             spec: RunSpec | None = None) -> tuple[PlannedRun, ConfigError]:
    return PlannedRun(spec, skipped=not_here(model, label)), ConfigError(
        f"{why}; {label('skip_missing')} skips the runs that need it", (MODEL,))


def build_all(specs: Sequence[RunSpec | Compiled]) -> list[Scorer]:
    """The scorer of each spec (:func:`plan_runs`, nothing skipped).

    Parameters
    ----------
    specs : the runs (with their provenance, for errors naming the options as given).

    Returns
    -------
    list of Scorer
        In order; specs with equal encoder specs and devices share one encoder object (one model
        loaded, each text encoded once by :func:`~alignscore.scorer.score_together`).

    Raises
    ------
    ConfigError
        As :func:`plan_runs`'s; a model that cannot be loaded too (ModelLoadError).

    Examples
    --------
    >>> from alignscore.config import run_spec
    >>> a, b = build_all([run_spec({"model": "all-MiniLM-L6-v2", "layer": n}) for n in (3, 4)])
    >>> a.encoder is b.encoder
    True
    """
    return plan_runs(specs).scorers()


__all__ = ["PlannedRun", "RunPlan", "RunSources", "build_all", "not_here", "plan_runs"]
