"""``alignscore.fit``: learn a composition's continuous settings on human judgments, with an
honest estimate of how well the result does on a language pair it never saw."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from tqdm import tqdm

from ..aggregators import AGGREGATORS
from ..aggregators.mix import LayerMix
from ..aggregators.single import SingleLayer
from ..aligners import ALIGNERS
from ..aligners.greedy import Greedy
from ..aligners.optimal import WMD, Sinkhorn
from ..config import Provenance, RunSpec, build, run_compiled, run_spec
from ..config.schema import OPTION, options as option_table
from ..errors import ConfigError, InputError
from ..settings import settings_of
from ..evaluation.wmt import LangPair, load_daseg
from ..textio import check_output_folder
from ..weighting import WEIGHTINGS
from ..weighting.classes import TOKEN_CLASSES, TokenClassWeights
from ..weighting.schemes import IdfL, IdfS, Uniform, _Idf
from .features import Features, extract
from .goal import Goal, challenge_texts, read_challenge
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
        raise ConfigError(f"--learn {unknown[0]}: not a setting the fit learns (it learns {', '.join(LEARNABLE)})")
    for n in names:
        if n in why_not:
            raise ConfigError(f"--learn {n}: {why_not[n]}")
    if not names:
        raise ConfigError("--learn: name at least one setting")
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
            raise ConfigError(f"--layers: the start's layer {k} is not among the layers mixed ({kept})")
        exact = tuple(math.inf if layer == k else -math.inf for layer in kept)
        init = tuple(LAYER_START if layer == k else 0.0 for layer in kept)
    else:
        assert isinstance(agg, LayerMix)
        kept = agg.layers_read()
        if layers and tuple(layers) != kept:
            raise ConfigError(f"--layers: the start mixes layers {kept}; leave --layers out or start from a single layer")
        exact = agg.logits
        init = tuple(LAYER_START if w == math.inf else 0.0 if w == -math.inf else w for w in exact)
    if len(kept) < 1:
        raise ConfigError("--layers: name at least one layer")
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


def fit(data: str | Path, model: str | None = None, start: str | Path | None = None,
        learn: str | Sequence[str] | None = None, budget: float = 10.0, output: str | Path | None = None,
        holdout: str | Path | None = None, layers: Sequence[int] | None = None,
        lang_pairs: str | Sequence[str] | None = None, year: str | None = None,
        seed: int = 0, steps: int = 200, resamples: int = 1000, max_memory: float | None = None, quiet: bool = True,
        style: str = "keyword", say: Callable[[str], None] | None = None, *,
        challenge: str | Path | None = None, objective: str = "correlation") -> FitResult:
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
    data : folder of ``DAseg.newstest{YEAR}.{reference,mt-system,human}.<lp>`` files.
    model : the encoder (overrides the start's).
    start : a run file to start from (default: BERTScore's composition for ``model``).
    learn : the settings to learn (default: every one that applies), or a comma list of them.
    budget : minutes the fits may take, in all.
    output : a folder for best.toml, scores.csv, folds.csv, leaderboard.md/.csv and
        layer_weights.png (nothing written when None).
    holdout : another DAseg folder the start and the fitted metric are scored on.
    layers : the layers a single-layer start is mixed over (default: every block; none for a
        static table).
    lang_pairs, year : which language pairs (a list, or a comma list) and year of ``data``.
    seed : the seed of the inner split and the resamples (the fit is deterministic).
    steps : the most optimisation steps per fit.
    resamples : bootstrap resamples of the intervals.
    max_memory : GiB the kept products may take (default :data:`MAX_MEMORY`): past it the fit stops with an error before they
        are made (they take ``itemsize L^2 (Tc Tr + Tc + Tr)`` bytes per pair of ``Tc``, ``Tr``
        tokens mixing ``L`` layers, ``itemsize`` 4, or 8 through optimal transport; over n-gram
        windows of ``K`` members, ``itemsize L^2 (Pc (Kc - 1) + Pr (Kr - 1))`` more for ``Pc``,
        ``Pr`` matchable tokens: :func:`~alignscore.fit.features.pair_bytes`).
    quiet : no progress bars.
    challenge : a challenge set (JSON lines, one reference per item) that ``objective`` reads.
    objective : what each fit maximises: ``correlation`` (the mean r), ``correlation + W *
        accuracy[CATEGORY]`` or ``correlation, accuracy[CATEGORY] >= X`` on ``challenge``
        (:class:`~alignscore.evaluation.objective.Objective`, as ``alignscore tune``
        reads it): the gradient follows a smooth surrogate of the accuracy
        (:class:`~alignscore.fit.goal.Goal`), the values kept are chosen on the true
        accuracy. The nested estimate stays the held-out mean |r|.

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
    for name, value, integer in (("budget", budget, False), ("steps", steps, True), ("resamples", resamples, True),
                                 ("max_memory", MAX_MEMORY if max_memory is None else max_memory, False)):
        least = {"steps": 1, "resamples": 100}.get(name, 0)
        kind = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value) or not (
                value >= least if integer else value > least):
            label = f"--{name.replace('_', '-')}" if style == "flag" else f"{name}="
            want = f"an integer >= {least}" if integer else "a finite number > 0"
            raise ConfigError(f"{label}: expected {want}, not {value!r}")
    if isinstance(learn, str):
        learn = [n.strip().replace("-", "_") for n in learn.split(",") if n.strip()]
    if isinstance(lang_pairs, str):
        lang_pairs = [lp.strip() for lp in lang_pairs.split(",")] if lang_pairs else None
    wanted, items = read_challenge(objective, challenge)
    given = dict(model=model, config=str(start) if start is not None else None)
    spec, provenance = run_compiled({k: v for k, v in given.items() if v is not None}, style=style)
    check_start(spec, provenance)
    names = learned(spec, learn)
    if layers and spec.encoder.static is not None:
        raise ConfigError(f"{'--layers' if style == 'flag' else 'layers='}: a static table has no layers to mix "
                          f"({spec.encoder.model!r}); leave it out")
    if output is not None:
        check_output_folder(output, OUTPUTS, [start, challenge, *spec.files()])
    pairs = load_daseg(data, lang_pairs, year)
    check_data(pairs, str(data))
    held = load_daseg(holdout) if holdout is not None else []
    check_data(held, str(holdout))
    scorer = build(spec, provenance=provenance)
    scorer.runtime = replace(scorer.runtime, progress=not quiet)
    composition = scorer.resolved()
    # a static table's resolved layer (0, the table) is no option of its run
    resolved = spec if spec.encoder.static is not None else replace(spec, composition=composition)
    kept, exact, init = start_values(resolved, scorer.encoder.num_layers, layers)
    mixed = [n for n in names if _declares(LayerMix, n)]
    if mixed and len(kept) < 2:
        names = [n for n in names if n not in mixed]
        if not names:
            raise ConfigError("--layers: one layer leaves no mix to learn, and nothing else was asked to move")
    too_big = "--max-memory" if style == "flag" else "max_memory="
    max_memory = MAX_MEMORY if max_memory is None else max_memory
    texts, good, bad = challenge_texts(items) if items else (None, None, None)
    features = extract(scorer, composition, pairs, kept, int(max_memory * 2**30), products_dtype(composition.aligner),
                       too_big=too_big, challenge=texts)
    goal = Goal(wanted, items, features.challenge, good, bad) if features.challenge is not None else None
    band = (f", {features.band_bytes / 2**20:.0f} MiB of it within texts for n-gram windows"
            if features.band_bytes else "")
    say(f"{len(pairs)} language pair(s), {sum(len(lp) for lp in pairs)} segments; keeping {len(kept)} layers "
        f"({features.nbytes / 2**20:.0f} MiB{band}{f', {len(items)} challenge items with them' if items else ''}); "
        f"learning {', '.join(names)}; objective {wanted}")
    plan = Optimisation(steps=steps, seed=seed)
    folds = len(pairs) if len(pairs) > 1 else 0
    total = budget * 60
    bar = tqdm(total=steps * (folds + 1), desc="fitting", disable=quiet, file=sys.stderr, leave=False)

    def deadline(k: int) -> float:
        left = total - (time.monotonic() - began)
        return time.monotonic() + max(left / (folds + 1 - k), 0.0)

    estimate, note = None, None
    if folds:
        estimate = nested(features, init, names, plan, deadline, resamples, lambda: bar.update(), exact, goal)
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
        result.holdout = score_holdout(scorer, composition, held, kept, exact, values, int(max_memory * 2**30))
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
