"""Named compositions. Each preset is a spec (:mod:`alignscore.composition`), which the CLI's
``--preset`` layers its options on, and a function that returns a :class:`Scorer`, whose keyword
arguments override any part (``bertscore(..., aligner=Sinkhorn())``) or runtime setting."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from .baseline import Baseline
from .composition import build
from .encoders.huggingface import HFEncoder
from .encoders.layers import DEFAULT_MODEL
from .errors import ConfigError
from .filters.lexical import MoverScoreV2Strings, StopWords
from .registry import Registry
from .scorer import Scorer


@dataclass(frozen=True)
class Preset:
    """A named composition: its ``spec`` (the model included) and what it reproduces."""

    name: str
    spec: Mapping[str, Any]
    doc: str


PRESETS: Registry[Preset] = Registry("preset")

BERTSCORE = Preset("bertscore", {"model": DEFAULT_MODEL, "special_tokens": "match-only", "weighting": "none",
                                 "aligner": "greedy", "multi_ref": "max"},
                   "BERTScore (Zhang et al., 2020): one layer, greedy matching of cosine similarities")
MOVERSCORE_V2 = Preset(
    "moverscore-v2",
    {"model": "distilbert-base-uncased", "layer": -1, "special_tokens": "keep", "filters": ["ms2-punct"],
     "weighting": "idf-S", "sep": True, "aligner": {"name": "wmd", "cost": "euclidean", "score": "1-d"},
     "multi_ref": "mean"},
    "the moverscore 1.0.3 package's moverscore_v2.word_mover_score")
MOVERSCORE_V1 = Preset(
    "moverscore-v1",
    {"model": "bert-base-uncased",
     "aggregator": {"name": "pmeans", "layers_spec": [-5, -4, -3, -2, -1], "powers": [-math.inf, 1.0, math.inf],
                    "normalize": True},
     "special_tokens": "keep", "filters": ["rm"], "weighting": "idf-S", "sep": True,
     "aligner": {"name": "wmd", "cost": "sqeuclidean", "score": "1-d"}, "multi_ref": "mean"},
    "MoverScore as the paper computes it (moverscore.py)")
for _preset in (BERTSCORE, MOVERSCORE_V2, MOVERSCORE_V1):
    PRESETS.register(_preset.name)(_preset)  # type: ignore[arg-type]  # the registry holds the presets


def scorer_from(preset: Preset, model: str | None = None, device: str | None = None, **overrides: Any) -> Scorer:
    """A :class:`Scorer` of ``preset`` (its model unless ``model``); ``overrides`` replace
    composition parts or runtime settings by :class:`Scorer` field name (``aggregator``,
    ``filters``, ``special_tokens``, ``weighting``, ``aligner``, ``metric``, ``multi_ref``,
    ``baseline``, ``batch_size``, ``cache``, ...)."""
    spec = dict(preset.spec)
    model = model or spec.pop("model")
    spec.pop("model", None)
    composition = build(spec, where=f"preset {preset.name}")
    known = {f.name for f in fields(Scorer)} - {"encoder"}
    unknown = set(overrides) - known
    if unknown:
        raise ConfigError(f"preset {preset.name}: unknown argument(s) {', '.join(sorted(unknown))}; "
                          f"parts and settings are: {', '.join(sorted(known))}")
    c = composition
    parts = dict(aggregator=c.aggregator, filters=c.roles.filters, special_tokens=c.roles.special,
                 weighting=c.weighting, aligner=c.aligner, metric=None, multi_ref=c.multi_ref)
    return Scorer(encoder=HFEncoder(model, device_name=device), **{**parts, **overrides})


def bertscore(model: str = DEFAULT_MODEL, layer: int | None = None, idf: bool = False,
              baseline: str | Path | Baseline | None = None, device: str | None = None,
              **overrides: Any) -> Scorer:
    """BERTScore (Zhang et al., 2020): one layer (``None``: the model's tuned layer), greedy
    matching of cosine similarities, optionally idf from the references (``idf=True`` is idf-S)
    and baseline rescaling (a :class:`Baseline` or a bert_score-format file).

    >>> scorer = bertscore("all-MiniLM-L6-v2", layer=4)            # doctest: +SKIP
    >>> scorer.score(["a cat sat"], ["the cat sat down"]).f1          # doctest: +SKIP
    """
    if baseline is not None and not isinstance(baseline, Baseline):
        baseline = Baseline.read(baseline)
    preset = Preset(BERTSCORE.name, {**BERTSCORE.spec, "layer": layer, "weighting": "idf-S" if idf else "none"},
                    BERTSCORE.doc)
    return scorer_from(preset, model, device, **{"baseline": baseline, **overrides})


def moverscore_v2(model: str = "distilbert-base-uncased", idf: bool = True, n_gram: int | str = 1,
                  stop_words: Sequence[str] = (), device: str | None = None, **overrides: Any) -> Scorer:
    """MoverScore as the ``moverscore`` 1.0.3 package's ``moverscore_v2.word_mover_score``
    computes it (to float tolerance; see tests/test_moverscore_parity.py):

    - the last layer's token vectors, unit-normalised; [CLS] and [SEP] take part (``keep``);
    - tokens whose string is one ASCII punctuation character or contains "##" get no mass
      (``ms2-punct``, its exact string test), nor do ``stop_words`` (exact token strings);
    - ``idf=True``: reference tokens weighed by the idf of the references, candidate tokens by
      the idf of the candidates (idf-S with SEP; [CLS]/[SEP] then get idf 0); ``idf=False``:
      mass 1 for every token (``defaultdict(lambda: 1.)``);
    - exact transport with Euclidean cost, ``score = 1 - WMD``; several references averaged.

    Its default model is distilbert-base-uncased. One difference: where every token of a text
    is filtered out, moverscore_v2 returns 1 (zero transport cost) and this preset 0, as every
    aligner here does for a text with nothing to align.
    """
    spec = dict(MOVERSCORE_V2.spec)
    spec["aligner"] = {**spec["aligner"], "n_gram": n_gram}
    if not idf:
        spec.update(weighting="none", sep=False)
    if stop_words:
        overrides.setdefault("filters", (MoverScoreV2Strings(),
                                         StopWords(stop_words, label="moverscore-stop-words", unit="token")))
    return scorer_from(Preset(MOVERSCORE_V2.name, spec, MOVERSCORE_V2.doc), model, device, **overrides)


def moverscore_v1(model: str = "bert-base-uncased", idf: bool = True, n_gram: int | str = 1,
                  device: str | None = None, **overrides: Any) -> Scorer:
    """MoverScore as the paper computes it (``moverscore.py`` of the ``moverscore`` package):

    - power means over the last five layers: each layer's token vectors L2-normalised, then
      ``[min; mean; max]`` across the five layers, concatenated (``PowerMeans``), re-normalised;
    - [RM]: punctuation and every non-first subword get no mass (``rm``, word starts from the
      tokenizer, so it holds for any tokenizer); [CLS]/[SEP] take part (``keep``; under idf
      their mass is 0);
    - ``idf=True``: reference idf from the references, candidate idf from the candidates;
    - exact transport with squared Euclidean cost, ``score = 1 - WMD``; ``n_gram`` for WMD-n.

    The paper used a BERT-base fine-tuned on MNLI; pass such a model as ``model``. Several
    references per candidate are averaged, as in MoverScore's examples (``multi_ref="max"``
    to override), in both MoverScore presets.
    """
    spec = dict(MOVERSCORE_V1.spec)
    spec["aligner"] = {**spec["aligner"], "n_gram": n_gram}
    if not idf:
        spec.update(weighting="none", sep=False)
    return scorer_from(Preset(MOVERSCORE_V1.name, spec, MOVERSCORE_V1.doc), model, device, **overrides)


__all__ = ["BERTSCORE", "MOVERSCORE_V1", "MOVERSCORE_V2", "PRESETS", "Preset", "bertscore", "moverscore_v1",
           "moverscore_v2", "scorer_from"]
