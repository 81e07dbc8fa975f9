"""A composition: the parts of a metric after the encoder.

The aggregator, token roles, weighting and aligner, which output is the score, how several
references reduce and the baseline rescaling. Its parts are frozen dataclasses whose fields are
their settings (:mod:`alignscore.settings`); the parts are checked against each other where it
is made, and against the model by :meth:`Composition.resolve`. The encoder is apart: one
encoding serves every composition over the same model (:mod:`alignscore.engine`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable

from .aggregators.base import Aggregator
from .aggregators.single import SingleLayer
from .aligners.base import Aligner
from .aligners.greedy import Greedy
from .rescale import Baseline
from .errors import ConfigError, describe
from .filters.base import SPECIAL_POLICIES, TokenRoles
from .lm import LMTerm
from .remap import Remapping, load_remapping, model_digest
from .settings import GIVEN, KEY, SettingError, check_settings, keyword, setting, settings_of
from .weighting.base import Weighting
from .weighting.classes import TokenClassWeights
from .weighting.schemes import Uniform

if TYPE_CHECKING:
    from .encoders.base import Encoder

MULTI_REF = ("max", "mean")  # how several references reduce; the first, bert_score's, is the default
LM_OPTIONS = tuple(f.name for f in fields(LMTerm) if f.init)  # the LM term's settings, a run's options by name


def lm_setting(name: str, **changes: Any) -> Any:
    """The run's option ``name``: :class:`~alignscore.lm.LMTerm`'s setting of that name, declared
    there once, with ``changes`` to its declaration (what it requires of the run's other options)."""
    declared = next(f for f in fields(LMTerm) if f.name == name)
    return field(default=declared.default, metadata={KEY: replace(declared.metadata[KEY], **changes)})


@dataclass(frozen=True)
class CompositionOptions:
    """The composition's own options, beside its parts: declared as every part's settings are,
    so that the option table, the checks and the writer read them from here.

    Examples
    --------
    >>> CompositionOptions(baseline="b.tsv", rescale=True).multi_ref
    'max'
    >>> CompositionOptions.of(Composition()).special_tokens
    'match-only'
    """

    special_tokens: str = setting("match-only", choices=SPECIAL_POLICIES, help=(
        "Special tokens: match-only (bert_score, the default), drop, or keep (moverscore_v2)."))
    metric: str | None = setting(None, metavar="OUTPUT", help=(
        "Which of the aligner's outputs is the score (picks the best reference; diff ranks by it). Default: f1 "
        "for greedy, score for optimal transport."))
    multi_ref: str = setting(MULTI_REF[0], choices=MULTI_REF, help=(
        "Several references: max per metric (bert_score, the default) or mean."))
    rescale: bool = setting(False, requires={"baseline": GIVEN}, help=(
        "Rescale with the --baseline file (--baseline alone implies it; --no-rescale switches off a file's)."))
    baseline: str | os.PathLike[str] | Baseline | None = setting(None, file=True, metavar="FILE",
                                                                 implies={"rescale": True},
                                                                 bert_score=("rescale_with_baseline", "baseline_path"),
                                                                 help=(
        "Baseline file in bert_score's format (LAYER,P,R,F); implies --rescale."))
    remap: str | os.PathLike[str] | Remapping | None = setting(None, file=True, metavar="FILE", help=(
        "A cross-lingual remapping (alignscore remap) applied to the sources' vectors: scoring against --sources "
        "with the model and layer it was learned for."))
    lm: str | os.PathLike[str] | None = lm_setting("lm")
    lm_weight: float = lm_setting("lm_weight", requires={"lm": (GIVEN,)})
    lm_score: str = lm_setting("lm_score", requires={"lm": (GIVEN,)})
    lm_location: float = lm_setting("lm_location", requires={"lm": (GIVEN,)})
    lm_scale: float = lm_setting("lm_scale", requires={"lm": (GIVEN,)})

    def __post_init__(self) -> None:
        check_settings(self)

    @classmethod
    def of(cls, composition: "Composition") -> "CompositionOptions":
        """The options a composition was made with (its baseline as the file it was read from)."""
        baseline, remap, lm = composition.baseline, composition.remap, composition.lm
        return cls(composition.roles.special, composition.metric, composition.multi_ref, baseline is not None,
                   baseline.source if baseline is not None and baseline.source else baseline,
                   remap.source if remap is not None and remap.source else remap,
                   **{name: getattr(lm, name) for name in LM_OPTIONS} if lm is not None else {})

    def compose(self, parts: dict[str, Any], filters: tuple[Any, ...]) -> "Composition":
        """The composition of these options and ``parts`` (by stage) and token ``filters``; the
        baseline file is read where rescaling is on."""
        baseline = self.baseline if self.rescale else None
        baseline = Baseline.read(baseline) if isinstance(baseline, (str, os.PathLike)) else baseline
        remap = load_remapping(self.remap) if isinstance(self.remap, (str, os.PathLike)) else self.remap
        lm = LMTerm(**{name: getattr(self, name) for name in LM_OPTIONS}) if self.lm is not None else None
        return Composition(roles=TokenRoles(self.special_tokens, filters), metric=self.metric,
                           multi_ref=self.multi_ref, baseline=baseline, remap=remap, lm=lm, **parts)


#: the type each object field of a :class:`Composition` holds, and how to make one
KINDS = {"aggregator": (Aggregator, ""), "roles": (TokenRoles, ""), "weighting": (Weighting, ""), "aligner": (Aligner, ""),
         "baseline": (Baseline, " (Baseline.read(path))"), "remap": (Remapping, " (load_remapping(path))"),
         "lm": (LMTerm, " (LMTerm(model, weight))")}


@dataclass(frozen=True)
class Composition:
    """A metric, given an encoder. Built once per model with :meth:`resolve` (layers counted from
    the top and the model's default layer become layer numbers); the engine takes resolved ones.

    Attributes
    ----------
    aggregator : which layers and how they become token vectors.
    roles : which tokens take part.
    weighting : their masses.
    aligner : how the two texts are aligned.
    metric : which of the aligner's outputs is the score (default its primary: F1 for greedy, the
        score for optimal transport).
    multi_ref : how a candidate's several references reduce: ``"max"`` per metric (bert_score's) or ``"mean"``.
    baseline : rescaling ``x' = (x - b) / (1 - b)`` (single-layer aggregators only).
    remap : a cross-lingual :class:`~alignscore.remap.Remapping` of the reference side's vectors,
        for scoring against sources (:meth:`Scorer.score <alignscore.scorer.Scorer.score>` with ``sources=``).
    lm : XMoverScore's target-side language-model term (:class:`~alignscore.lm.LMTerm`), added to
        each candidate's scores against sources.
    default_of : the known model whose default layer a local copy of it was given (set by
        :meth:`resolve`; the signature says so).

    Examples
    --------
    >>> from alignscore import WMD, PowerMeans
    >>> Composition(aligner=WMD()).metric
    'score'
    >>> Composition(aggregator=PowerMeans(), baseline=Baseline({4: {"f1": 0.8}}))
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: baseline rescaling reads one row per layer: it needs the single-layer aggregator, ...
    """

    aggregator: Aggregator = field(default_factory=SingleLayer)
    roles: TokenRoles = field(default_factory=TokenRoles)
    weighting: Weighting = field(default_factory=Uniform)
    aligner: Aligner = field(default_factory=Greedy)
    metric: str | None = None
    multi_ref: str = MULTI_REF[0]
    baseline: Baseline | None = None
    remap: Remapping | None = None
    lm: LMTerm | None = None
    default_of: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for f in fields(self):  # every part and object field holds what its type says (None where optional)
            kind, value = KINDS.get(f.name), getattr(self, f.name)
            if kind is not None and not isinstance(value, kind[0]) and not (value is None and f.default is None):
                raise ConfigError(f"{f.name} must be an instance of {kind[0].__name__}{kind[1]}, not {describe(value)}",
                                  (f.name,))
        own = {s.name: s for s in settings_of(CompositionOptions)}
        object.__setattr__(self, "multi_ref", own["multi_ref"].check(self.multi_ref))
        if isinstance(self.weighting, TokenClassWeights):  # the special-token policy: the options' first
            self.weighting.check_special_policy(self.roles.special, next(iter(own)))
        try:
            object.__setattr__(self, "aligner", self.aligner.for_vectors(self.aggregator.output()))
        except ConfigError as exc:
            raise ConfigError(str(exc), ("aligner", "aggregator")) from None
        if self.metric is None:
            object.__setattr__(self, "metric", self.aligner.primary)
        elif self.metric not in self.aligner.metrics:
            raise ConfigError(f"aligner {self.aligner.signature()} has no output {self.metric!r} "
                              f"(it gives {', '.join(self.aligner.metrics)})", ("metric", "aligner"))
        if self.remap is not None or self.lm is not None:  # a remapped run, an LM term: against sources only
            self.check_side(sources=True)
        for name, why in (("remap", "a remapping maps one layer's vectors"),
                          ("baseline", "baseline rescaling reads one row per layer")):
            if getattr(self, name) is not None and not self.aggregator.output().one_layer:
                raise ConfigError(f"{why}: it needs the single-layer aggregator, not {self.aggregator.output()}",
                                  (name, "aggregator"))

    def check_encoder(self, static: str | None, name: str) -> None:
        """Raise where this composition cannot read an encoder of this kind: a static table
        (``static`` names its format) has no layers to choose or aggregate."""
        if static is None:
            return
        agg = self.aggregator
        given = [s.name for s in settings_of(type(agg)) if getattr(agg, s.name) != s.default]
        if given or not agg.output().one_layer:  # one layer, the table's: every aggregator setting is a layer's
            what = f"{given[0]} {getattr(agg, given[0])}" if given else f"aggregator {type(agg).__name__}"
            raise ConfigError(f"{name!r} is a static table (one vector per token, no layers): layer and "
                              f"aggregator settings do not apply to it (given: {what}); leave them out",
                              ((given or ["aggregator"])[0], "model"))

    def parts(self) -> dict[str, Aggregator | Weighting | Aligner]:
        """The parts chosen by name, by stage, in the order a run is written."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if isinstance(getattr(self, f.name), (Aggregator, Weighting, Aligner))}

    @property
    def metrics(self) -> tuple[str, ...]:
        """The outputs, per pair and per candidate."""
        return tuple(self.aligner.metrics)

    def resolve(self, encoder: Encoder) -> "Composition":
        """This composition for ``encoder``'s model: absolute layers (the model's default layer
        where none was given) and a baseline checked against them. Raises ConfigError."""
        self.check_encoder(None if encoder.has_layers else "table", encoder.name)
        try:
            aggregator = self.aggregator.resolve(encoder.num_layers, encoder.default_layer())
        except SettingError as exc:
            raise SettingError(exc.field, f"{exc.reason} (model {encoder.name!r})") from None
        default_of = encoder.default_layer_origin() if self.aggregator.takes_default else None
        out = replace(self, aggregator=aggregator, default_of=default_of)
        out.baseline_values()
        if self.remap is not None:
            try:
                self.remap.check(model_digest(encoder), aggregator.layers_read()[0], model=encoder.name)
            except ConfigError as exc:
                raise ConfigError(str(exc), ("remap",)) from None
        return out

    def baseline_values(self) -> dict[str, float] | None:
        """The baseline row of the (resolved) single layer, or ``None`` without a baseline."""
        if self.baseline is None:
            return None
        try:
            values = self.baseline.values(self.aggregator.layers_read()[0])
        except ConfigError as exc:
            raise ConfigError(str(exc), ("baseline", *(s.name for s in settings_of(type(self.aggregator))))) from None
        # rescaling only some outputs would report rescaled and raw scores side by side
        if missing := [m for m in self.metrics if m not in values]:
            raise ConfigError(f"the baseline has no value for the output(s) {', '.join(missing)} "
                              f"of {self.aligner.signature()}", ("baseline", "aligner"))
        return values

    def check_side(self, sources: bool, name: Callable[[str], str] = keyword) -> None:
        """Raise where the composition cannot score this side: a remapping maps sources, the LM
        term is XMoverScore's (reference-free only), and a baseline was computed against references
        (``name``: how the run names the option that scores against sources,
        :meth:`Runtime.name <alignscore.runtime.Runtime.name>`)."""
        if sources and self.baseline is not None:
            raise ConfigError("a baseline rescales scores against references in the candidates' language: not "
                              "against sources; leave it out", ("baseline",))
        if not sources and self.remap is not None:
            raise ConfigError(f"remapping {self.remap.digest()} maps sources into the candidates' language: score "
                              f"against sources ({name('sources')}), or leave it out", ("remap",))
        if not sources and self.lm is not None:
            raise ConfigError(f"the language-model term ({self.lm.lm}) is XMoverScore's, defined for scoring against "
                              f"sources only: score against sources ({name('sources')}), or leave it out", ("lm",))


__all__ = ["MULTI_REF", "Composition", "CompositionOptions"]
