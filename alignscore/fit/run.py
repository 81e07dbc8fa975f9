"""``alignscore.fit``: learn a composition's continuous settings on human judgments, with an
honest estimate of how well the result does on a language pair it never saw."""

from __future__ import annotations

import math
import sys
import time
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tqdm import tqdm

from ..aggregators import AGGREGATORS
from ..aggregators.mix import LayerMix
from ..aggregators.single import SingleLayer
from ..aligners import ALIGNERS
from ..aligners.greedy import Greedy
from ..aligners.optimal import WMD, Sinkhorn
from ..config import Provenance, RunSpec, build, run_spec
from ..config.compile import Source, compile_labelled, sources_of
from ..config.schema import OPTION, options as option_table
from ..errors import ConfigError, InputError
from ..evaluation.objective import JudgedOptions
from ..settings import SettingError, comma_list, setting, settings_of
from ..evaluation.reference_free import against_sources as against_sources_of, check_remaps, remaps_for, split_remap
from ..evaluation.wmt import LangPair, load_daseg
from ..textio import check_output_folder
from ..weighting import WEIGHTINGS
from ..weighting.classes import TOKEN_CLASSES, TokenClassWeights
from ..weighting.schemes import IdfL, IdfS, Uniform, _Idf
from .features import Features, extract
from .goal import Goal, challenge_texts, read_challenge
from .lm import LMFit, fit_lm_term, lm_output_names
from .model import CLASS_SETTINGS, LAYER_START, LEARNABLE, Values, scores_of
from .optimise import Optimisation, abs_r, fit_values, nested
from .transport import products_dtype, refused
from .outputs import FitResult, write_outputs

#: the fewest segments of a language pair a fit learns from
MIN_SEGMENTS = 30
#: GiB the kept products of a fit may take unless told otherwise
MAX_MEMORY = 8.0
OUTPUTS = ("best.toml", "scores.csv", "folds.csv", "leaderboard.md", "leaderboard.csv", "layer_weights.png")


def _declares(part: type, name: str) -> bool:
    """Whether ``part`` declares the setting ``name``."""
    return any(s.name == name for s in settings_of(part))


def check_start(spec: RunSpec, provenance: Provenance | None = None) -> None:
    """Refuse a start whose parts the fit cannot learn through: it mixes layers (aggregator
    single or mix), aligns greedily or by optimal transport over tokens or n-gram windows (wmd
    without flow dropout, sinkhorn), weighs by none, idf-S or idf-L, without a baseline."""
    c, labels = spec.composition, (provenance or Provenance()).labels
    named = lambda option: labels.get(option, option)  # noqa: E731 - as given, else its bare name
    bad = [(AGGREGATORS.stage, c.aggregator, (SingleLayer, LayerMix), "single or mix"),
           (ALIGNERS.stage, c.aligner, (Greedy, WMD, Sinkhorn), "greedy, wmd or sinkhorn"),
           (WEIGHTINGS.stage, c.weighting, (Uniform, IdfS, IdfL), "none, idf-S or idf-L")]
    for name, part, kinds, allowed in bad:
        if not isinstance(part, kinds):
            raise ConfigError(f"{named(name)}: the fit learns through {name} {allowed}, not "
                              f"{type(part).__name__}; start from a run that uses one")
    why = refused(c.aligner)
    if why is not None:
        raise ConfigError(f"{named(why[0])}: {why[1]}")
    if any(w != 1 for w in c.weighting.class_weights()):
        raise ConfigError(f"{named(WEIGHTINGS.stage)}: the fit does not learn through token-class weights yet; start "
                          "from a run whose class weights are all 1")
    if c.baseline is not None:
        raise ConfigError(f"{named(OPTION.baseline.name)}: a rescaled run cannot be fitted (rescaling does not "
                          "change r); leave the baseline out")


def check_side(spec: RunSpec, provenance: Provenance, sources: bool) -> None:
    """Refuse a start that cannot score the fit's side (against references: an LM term or a
    remapping; against sources: a baseline), naming the option as the user gave it."""
    try:
        spec.composition.check_side(sources)
    except ConfigError as exc:
        raise provenance.relabel(exc) from None


def learned(spec: RunSpec, names: Sequence[str] | None) -> list[str]:
    """The settings to learn: ``names`` checked, or every one that applies to ``spec`` (the idf
    exponent where the start weighs by idf; the special tokens' class weight where they carry
    mass, ``special_tokens = "keep"``; with a static table, no layer setting, no special tokens'
    weight and, for word vectors, no subword continuations' weight)."""
    c, static, table = spec.composition, spec.encoder.static, option_table()
    idf = isinstance(c.weighting, _Idf)
    of_idf = {s.name for s in settings_of(_Idf)} - {s.name for s in settings_of(TokenClassWeights)}
    by_class = {k: s.name for k, s in zip(TOKEN_CLASSES, CLASS_SETTINGS)}
    special, subword = by_class["special"], by_class["subword"]
    why_not: dict[str, str] = {}
    of_aligner = {n for n in LEARNABLE if _declares(Greedy, n) or _declares(Sinkhorn, n)}
    for n in LEARNABLE:
        if static is not None and n in table and table[n].layered:
            why_not[n] = f"a static table has no layers to mix ({spec.encoder.model!r}); leave it out"
        elif n in of_aligner and not _declares(type(c.aligner), n):
            why_not[n] = f"not a setting of the start's aligner {c.aligner.name}"
        elif n in of_idf and not idf:
            why_not[n] = f"applies with weighting idf-S or idf-L only (the start weighs by {type(c.weighting).__name__})"
        elif n == special and static is not None:
            why_not[n] = "a static table has no special tokens"
        elif n == special and c.roles.special != "keep":
            why_not[n] = f"special tokens carry mass with special_tokens keep only (the start's: {c.roles.special})"
        elif n == subword and static == "vectors":
            why_not[n] = "word vectors have no subword continuations (each token is a word)"
    if names is None:
        return [n for n in LEARNABLE if n not in why_not]
    unknown = [n for n in names if n not in LEARNABLE]
    if unknown:
        raise SettingError("learn", f"{unknown[0]}: not a setting the fit learns (it learns {', '.join(LEARNABLE)})")
    for n in names:
        if n in why_not:
            raise SettingError("learn", f"{n}: {why_not[n]}")
    return list(dict.fromkeys(names))


def check_data(pairs: Sequence[LangPair], where: str) -> None:
    """At least :data:`MIN_SEGMENTS` segments per language pair."""
    for lp in pairs:
        if len(lp) < MIN_SEGMENTS:
            raise InputError(f"{lp.name}: {len(lp)} segments; a fit needs at least {MIN_SEGMENTS} per language pair",
                             where)


def start_values(spec: RunSpec, num_layers: int, layers: Sequence[int] | None) -> tuple[tuple[int, ...], Values, Values]:
    """The kept layers, the start's exact values (an ``inf`` logit marks a single layer) and
    where the optimisation starts (finite logits)."""
    c = spec.composition
    agg = c.aggregator
    aligner = c.aligner
    power = c.weighting.idf_power if isinstance(c.weighting, _Idf) else 1.0
    if isinstance(aligner, Greedy):
        common: dict[str, Any] = dict(temperature=aligner.temperature, idf_power=power, beta=aligner.beta or 1.0,
                                      metric=c.metric or "f1")
    else:  # wmd or sinkhorn (check_start)
        common = dict(idf_power=power, metric="score", aligner=aligner)
        if isinstance(aligner, Sinkhorn):
            common.update(reg=aligner.reg)
    if spec.encoder.static is not None:  # the table's vectors: one state per token, kept whole (no mix)
        whole = Values((math.inf,), **common)  # type: ignore[arg-type]
        return (0,), whole, whole
    if isinstance(agg, SingleLayer):
        k = agg.layer
        kept = tuple(layers) if layers else tuple(range(1, num_layers + 1))
        if k not in kept:
            raise SettingError("layers", f"the start's layer {k} is not among the layers mixed ({kept})")
        exact = tuple(math.inf if layer == k else -math.inf for layer in kept)
        init = tuple(LAYER_START if layer == k else 0.0 for layer in kept)
    else:
        assert isinstance(agg, LayerMix)
        kept = agg.layers_read()
        if layers and tuple(layers) != kept:
            raise SettingError("layers", f"the start mixes layers {kept}; leave it out or start from a single layer")
        exact = agg.logits
        init = tuple(LAYER_START if w == math.inf else 0.0 if w == -math.inf else w for w in exact)
    return kept, Values(exact, **common), Values(init, **common)  # type: ignore[arg-type]


def fitted_spec(start: RunSpec, values: Values, layers: Sequence[int], learn: Sequence[str]) -> RunSpec:
    """The run file of the fitted metric: the start's options with the learned settings, through
    the one compiler (:func:`~alignscore.config.run_spec`); a static table's run has no layers
    and no mix."""
    options: dict[str, Any] = start.to_mapping()
    found = values.options(learn)
    if start.encoder.static is None:
        for s in settings_of(SingleLayer):
            options.pop(s.name, None)
        options.update(aggregator="mix", layers=list(layers))
    else:
        found.pop(OPTION.mix_weights.name)
    options.update(found)
    return run_spec(options)


@dataclass(frozen=True)
class FitOptions(JudgedOptions):
    """The options of a fit (``alignscore fit``'s flags, :func:`fit`'s keywords): besides the
    data and the objective (:class:`~alignscore.evaluation.objective.JudgedOptions`), where it
    starts, what it learns and what it may spend.

    Examples
    --------
    >>> FitOptions.given({"data": "wmt", "learn": "temperature, idf-power", "layers": "2-4"}).learn
    ('temperature', 'idf_power')
    >>> FitOptions.given({"data": "wmt", "steps": 0})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: steps=: expected an integer >= 1, not 0
    """

    start: tuple[str, ...] | None = setting(None, flag="from", metavar="FILE", help=(
        "A run file to start from (e.g. tune's best.toml; --model overrides its model): aggregator single or mix, "
        "aligner greedy, wmd (no flow dropout) or sinkhorn, over tokens or n-gram windows, weighting none, idf-S or "
        "idf-L. Default: BERTScore's composition for --model. Given two or more times: a combination of those runs, "
        "its weights learned (docs/combinations.md)."))
    pull: float = setting(0.0, ge=0, help=(
        "With two or more --from: the L2 pull of the combination's weights toward equal weights."))
    learn: tuple[str, ...] | None = setting(None, metavar="NAMES", help=(
        "The settings to learn, a comma list (default: every one that applies to the start, docs/fit.md) of "
        "mix_weights, temperature, idf_power, beta, reg and the token-class weights special_weight, punct_weight, "
        "stopword_weight, subword_weight."))
    layers: tuple[int, ...] | None = setting(None, ge=0, metavar="LIST", help=(
        "The layers a single-layer start is mixed over, e.g. '2-6' (default: every block; the start's layer among "
        "them). Not with a static table (no layers)."))
    budget: float = setting(10.0, gt=0, metavar="MINUTES", help=(
        "Minutes the fits may take in all (the nested folds and the final fit share them)."))
    steps: int = setting(200, ge=1, help=(
        "The most optimisation steps of one fit (early stopping usually ends it sooner)."))
    max_memory: float = setting(MAX_MEMORY, gt=0, metavar="GIB", help=(
        "GiB the fit may keep (the products of the mixed layers' states, and through n-gram windows those within each "
        "text); refused past it."))
    output: str | os.PathLike | None = setting(None, short="-o", metavar="DIR", help=(  # type: ignore[type-arg]
        "Output folder: best.toml, scores.csv, folds.csv, leaderboard.md/.csv, layer_weights.png (the command's "
        "default: fit-out; from Python, none: nothing written)."))
    against_sources: bool = setting(False, flag="sources", help=(
        "Score each MT output against its source (DAseg.*.source.*; --remap: a file, or a folder of <lang>.remap "
        "files) and learn the --lm term's weight, location and scale, the composition and its remapping fixed "
        "(best.toml, with --remap best.<lang>.toml per source language; lm_weight.png in place of "
        "layer_weights.png)."))

    @classmethod
    def given(cls, values: Mapping[str, Any], labels: Mapping[str, str] | None = None, text: bool = False) -> Any:
        start = values.get("start")  # one run file (a path), or several (a combination)
        if start is not None:
            many = start if isinstance(start, (list, tuple)) else [start]
            values = {**values, "start": [os.fspath(f) if isinstance(f, os.PathLike) else f for f in many]}
        return super().given(values, labels, text)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.learn is not None:
            names = [n.replace("-", "_") for n in comma_list(self.learn) or ()]
            if not names:
                raise self.relabel(SettingError("learn", "name at least one setting"))
            object.__setattr__(self, "learn", tuple(dict.fromkeys(names)))


def fit(data: str | Path | FitOptions, *, sources: Sequence[Source] = (), quiet: bool = True,
        say: Callable[[str], None] | None = None, **keywords: Any) -> Any:
    """Fit the continuous settings of a composition to the human judgments of a WMT DAseg folder.

    Every text is encoded once and what the mixed layers' states give a mix's similarities kept
    (:mod:`~alignscore.fit.features`; the states themselves are dropped); the settings
    (:data:`~alignscore.fit.model.LEARNABLE`: the layer mix, the soft greedy temperature, the
    idf exponent, F-beta's beta, the token-class weights, Sinkhorn's reg) move by gradient
    ascent, through the greedy aligner or the optimal-transport ones over tokens, on the mean
    Pearson r over language pairs, with a penalty toward the start and early stopping on an
    inner fold of segments. A static table (word vectors, a model2vec model) has no layers: its
    one vector per token is kept whole and every other setting that applies is learned.
    With two or more language pairs, leave-one-pair-out nested cross-validation estimates the
    held-out mean |r| of the fitted metric and of its start, with 95% intervals.

    Parameters
    ----------
    data : a DAseg folder (``DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>`` files), or
        the whole :class:`FitOptions`.
    sources : run options as compiled sources (the command line's ``--model``), below ``**keywords``.
    quiet : no progress bars.
    say : takes each line of progress.
    **keywords : the fields of :class:`FitOptions` (``start=``, ``learn=``, ``budget=``,
        ``output=``, ``challenge=``, ``objective=``, ...), and run options (``model=``: the
        encoder, over the start's).

    Returns
    -------
    FitResult
        The fitted run (what best.toml holds), its start, their values, scores and estimates.

    Raises
    ------
    ConfigError, InputError
        Bad options or data, before any model loads or anything is written.

    Examples
    --------
    >>> fit("no/such/folder")
    Traceback (most recent call last):
    alignscore.errors.InputError: no/such/folder: not a folder of WMT DAseg files
    """
    began = time.monotonic()
    say = say or (lambda msg: None)
    own = {k: keywords.pop(k) for k in [k for k in keywords if k in FitOptions.names()]}
    if isinstance(data, FitOptions) and own:
        raise ConfigError(f"{next(iter(own))}=: given beside a FitOptions; set it there")
    opts = data if isinstance(data, FitOptions) else FitOptions.given({"data": data, **own})
    try:
        if opts.start is not None and len(opts.start) > 1:
            return _combined(opts, keywords, sources, say)
        if opts.pull:
            raise SettingError("pull", f"applies to a combination (two or more {opts.label('start')}) only")
        if opts.against_sources:
            return _lm_fit(opts, [*sources, *sources_of(keywords)], quiet, say, began)
        return _fit(opts, [*sources, *sources_of(keywords)], quiet, say, began)
    except SettingError as exc:  # a fit's own option, named as the caller gave it
        raise opts.relabel(exc) if exc.field in FitOptions.names() else exc from None


def _combined(opts: FitOptions, keywords: dict[str, Any], sources: Sequence[Source],
              say: Callable[[str], None]) -> Any:
    """A fit of a combination's weights (:func:`~alignscore.fit.combination_run.fit_combination`)
    over the runs ``opts.start``; the options of a continuous fit do not apply."""
    from .combination_run import fit_combination

    given = [n for n in ("learn", "layers", "challenge") if getattr(opts, n) is not None]
    if given or opts.objective != "correlation":
        raise SettingError((given or ["objective"])[0], "applies to a fit of one run's settings, not to a "
                           f"combination's weights (several {opts.label('start')})")
    model = {k: keywords.pop(k) for k in [OPTION.model.name] if k in keywords}
    if keywords or any(k != OPTION.model.name for s in sources for k in s.values):  # the command line's: --model
        raise ConfigError(f"{next(iter(keywords), 'sources')}=: a combination's parts take their options from their "
                          "run files (model= only beside them)")
    return fit_combination(opts.data, opts.start, [*sources, *sources_of(model)], opts.output, opts.holdout,
                           opts.lang_pairs, opts.year, opts.pull, opts.seed, opts.bootstrap, opts.label, say)


def _lm_fit(opts: FitOptions, sources: Sequence[Source], quiet: bool, say: Callable[[str], None],
            began: float) -> LMFit:
    """A fit against sources: the LM term's weight, location and scale
    (:func:`~alignscore.fit.lm.fit_lm_term`), the composition and its remapping fixed; every
    option and file checked before any model loads."""
    given = [n for n in ("learn", "layers", "challenge") if getattr(opts, n) is not None]
    if given or opts.objective != "correlation":
        raise SettingError((given or ["objective"])[0], f"applies to a fit against references; with "
                           f"{opts.label('against_sources')} the fit learns the LM term's weight only")
    start, output = opts.start[0] if opts.start else None, opts.output
    flags, remap = split_remap(sources)
    spec, provenance = compile_labelled([*(sources_of({OPTION.config.name: start}) if start else []), *flags])
    if spec.composition.lm is None:
        raise ConfigError(f"{opts.label('against_sources')}: the fit against sources learns the weight of the "
                          f"language-model term: give one ({provenance.name(OPTION.lm.name)})")
    check_side(spec, provenance, True)
    pairs = load_daseg(opts.data, opts.lang_pairs, opts.year)
    check_data(pairs, str(opts.data))
    held = load_daseg(opts.holdout) if opts.holdout is not None else []
    check_data(held, str(opts.holdout))
    side = opts.label("against_sources")
    remaps = remaps_for(*remap, [lp.src for lp in [*pairs, *held]]) if remap is not None else None
    pairs, held = against_sources_of(pairs, remaps, side), against_sources_of(held, remaps, side)
    if output is not None:
        check_output_folder(output, lm_output_names([lp.src for lp in pairs if lp.remap is not None]),
                            [start, *spec.files(), *(lp.remap.source for lp in [*pairs, *held] if lp.remap)])
    scorer = build(spec, provenance=provenance)
    if remap is not None:
        check_remaps([scorer.resolved()], [scorer], [lp.remap for lp in [*pairs, *held]], remap[1])
    result = fit_lm_term(spec, provenance, pairs, held, output, opts.bootstrap, opts.seed, not quiet, say)
    result.seconds = time.monotonic() - began
    return result


def _fit(opts: FitOptions, sources: Sequence[Source], quiet: bool, say: Callable[[str], None],
         began: float) -> FitResult:
    wanted = opts.wanted
    items = read_challenge(wanted, opts.challenge)
    start, output = opts.start[0] if opts.start else None, opts.output
    spec, provenance = compile_labelled([*(sources_of({OPTION.config.name: start}) if start else []), *sources])
    check_side(spec, provenance, False)
    check_start(spec, provenance)
    names = learned(spec, opts.learn)
    if opts.layers and spec.encoder.static is not None:
        raise SettingError("layers", f"a static table has no layers to mix ({spec.encoder.model!r}); leave it out")
    if output is not None:
        check_output_folder(output, OUTPUTS, [start, opts.challenge, *spec.files()])
    pairs = load_daseg(opts.data, opts.lang_pairs, opts.year)
    check_data(pairs, str(opts.data))
    held = load_daseg(opts.holdout) if opts.holdout is not None else []
    check_data(held, str(opts.holdout))
    scorer = build(spec, provenance=provenance)
    scorer.runtime = replace(scorer.runtime, progress=not quiet)
    composition = scorer.resolved()
    # a static table's resolved layer (0, the table) is no option of its run
    resolved = spec if spec.encoder.static is not None else replace(spec, composition=composition)
    kept, exact, init = start_values(resolved, scorer.encoder.num_layers, opts.layers)
    mixed = [n for n in names if _declares(LayerMix, n)]
    if mixed and len(kept) < 2:
        names = [n for n in names if n not in mixed]
        if not names:
            raise SettingError("layers", "one layer leaves no mix to learn, and nothing else was asked to move")
    limit = int(opts.max_memory * 2**30)
    texts, good, bad = challenge_texts(items) if items else (None, None, None)
    features = extract(scorer, composition, pairs, kept, limit, products_dtype(composition.aligner),
                       too_big=opts.label("max_memory"), challenge=texts)
    goal = Goal(wanted, items, features.challenge, good, bad) if features.challenge is not None else None
    band = (f", {features.band_bytes / 2**20:.0f} MiB of it within texts for n-gram windows"
            if features.band_bytes else "")
    say(f"{len(pairs)} language pair(s), {sum(len(lp) for lp in pairs)} segments; keeping {len(kept)} layers "
        f"({features.nbytes / 2**20:.0f} MiB{band}{f', {len(items)} challenge items with them' if items else ''}); "
        f"learning {', '.join(names)}; objective {wanted}")
    plan = Optimisation(steps=opts.steps, seed=opts.seed)
    folds = len(pairs) if len(pairs) > 1 else 0
    total = opts.budget * 60
    bar = tqdm(total=opts.steps * (folds + 1), desc="fitting", disable=quiet, file=sys.stderr, leave=False)

    def deadline(k: int) -> float:
        left = total - (time.monotonic() - began)
        return time.monotonic() + max(left / (folds + 1 - k), 0.0)

    estimate, note = None, None
    if folds:
        estimate = nested(features, init, names, plan, deadline, opts.bootstrap, lambda: bar.update(), exact, goal)
    else:
        note = (f"one language pair ({pairs[0].name}): no cross-validation, so no estimate of how the fit does on "
                "data it never saw; fit on two or more language pairs for one")
    final = fit_values(features, list(range(len(pairs))), init, names, plan, deadline(folds), lambda: bar.update(),
                       exact, goal)
    bar.close()
    values = final.values
    spec_out = fitted_spec(spec, values, kept, names)
    result = FitResult(spec_out, spec, values, exact, kept, [lp.name for lp in pairs], scores_of(features, values),
                       [pf.human for pf in features.pairs], final, estimate, note)
    result.state_bytes, result.learned, result.objective = features.nbytes, tuple(names), wanted
    if goal is not None:
        result.accuracy = {"start": float(final.accuracy_start or 0.0), "fitted": float(final.accuracy_best or 0.0)}
    everything = range(len(pairs))
    for name, v in (("start", exact), ("fitted", values)):
        result.in_sample[name] = sum(abs_r(scores_of(features, v), features, everything)) / len(pairs)
    if held:
        result.holdout = score_holdout(scorer, composition, held, kept, exact, values, limit)
    result.seconds = time.monotonic() - began
    if output is not None:
        write_outputs(output, result, features)
    return result


def score_holdout(scorer: Any, composition: Any, held: Sequence[LangPair], kept: Sequence[int], exact: Values,
                  values: Values, limit: int) -> dict[str, float]:
    """Mean |r| over the holdout's language pairs of the start and of the fitted metric (one
    encoding of the holdout's texts)."""
    features: Features = extract(scorer, composition, held, kept, limit, products_dtype(composition.aligner))
    out = {}
    for name, v in (("start", exact), ("fitted", values)):
        scores = scores_of(features, v)
        out[name] = float(sum(abs_r(scores, features, range(len(held)))) / len(held))
    return out
