"""Named compositions. Each preset is a spec (:mod:`alignscore.composition`), which the CLI's
``--preset`` layers its options on, and a function that returns a :class:`Scorer`, whose keyword
arguments override any part (``bertscore(..., aligner=Sinkhorn())``) or runtime setting."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

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
    """A named composition: its ``spec`` (the model included), what it reproduces, and the
    function that makes its :class:`Scorer` (calling the preset calls it)."""

    name: str
    spec: Mapping[str, Any]
    doc: str
    factory: Callable[..., Scorer] | None = field(default=None, compare=False)

    def __call__(self, **kwargs: Any) -> Scorer:
        if self.factory is None:
            raise ConfigError(f"preset {self.name} has no scorer function")
        return self.factory(**kwargs)


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
BARYSCORE = Preset(
    "baryscore",
    {"model": "bert-base-uncased", "aggregator": {"name": "stack", "layers_spec": [-5, -4, -3, -2, -1]},
     "special_tokens": "keep", "weighting": "idf-S", "sep": True,
     "aligner": {"name": "baryscore", "layers": 5, "reg": 0.01}},
    "BaryScore (Colombo et al., 2021): Wasserstein barycenters of the last five layers")


def scorer_from(preset: Preset, spec: Mapping[str, Any], device: str | None, overrides: dict[str, Any],
                set_by: dict[str, list[str]]) -> Scorer:
    """The :class:`Scorer` of ``spec`` (``preset``'s, adjusted by the preset function's own
    arguments), each part replaced by the keyword of the same name in ``overrides`` (any Scorer
    field: ``aggregator``, ``filters``, ``special_tokens``, ``weighting``, ``aligner``, ``metric``,
    ``multi_ref``, ``baseline``, ``encoder``, ``batch_size``, ``cache``, ...). An unknown keyword,
    or a part given both by keyword and through the preset's own arguments that build it
    (``set_by``: part -> the arguments the caller set, e.g. ``layer=`` and ``aggregator=``), is a
    ConfigError."""
    function = preset.name.replace("-", "_")
    names = [f.name for f in fields(Scorer)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ConfigError(f"{function}() got unknown keyword(s) {', '.join(unknown)}; besides its own arguments "
                          f"it takes the parts of a Scorer: {', '.join(names)}")
    for part, arguments in set_by.items():
        if part in overrides and arguments:
            raise ConfigError(f"{function}(): {', '.join(a + '=' for a in arguments)} and {part}= both set the "
                              f"{part}; give one")
    spec = dict(spec)
    model = spec.pop("model")
    c = build(spec, where=f"preset {preset.name}")
    parts = dict(encoder=HFEncoder(model, device_name=device), aggregator=c.aggregator, filters=c.roles.filters,
                 special_tokens=c.roles.special, weighting=c.weighting, aligner=c.aligner, multi_ref=c.multi_ref)
    return Scorer(**{**parts, **overrides})


def _given(**flags: bool) -> list[str]:
    """The names of the arguments a caller set (those whose flag is true)."""
    return [name for name, given in flags.items() if given]


def bertscore(model: str = DEFAULT_MODEL, layer: int | None = None, idf: bool = False,
              baseline: str | Path | Baseline | None = None, device: str | None = None,
              **overrides: Any) -> Scorer:
    """BERTScore (Zhang et al., 2020): one layer (``None``: the model's tuned layer), greedy
    matching of cosine similarities, optionally idf from the references (``idf=True`` is idf-S)
    and baseline rescaling (a :class:`Baseline` or a bert_score-format file).

    >>> scorer = bertscore("all-MiniLM-L6-v2", layer=4)            # doctest: +SKIP
    >>> scorer.score(["a cat sat"], ["the cat sat down"]).f1          # doctest: +SKIP
    """
    if isinstance(baseline, (str, os.PathLike)):
        baseline = Baseline.read(baseline)
    spec = {**BERTSCORE.spec, "model": model, "layer": layer, "weighting": "idf-S" if idf else "none"}
    return scorer_from(BERTSCORE, spec, device, {"baseline": baseline, **overrides},
                       {"encoder": _given(model=model != DEFAULT_MODEL, device=device is not None),
                        "aggregator": _given(layer=layer is not None), "weighting": _given(idf=idf)})


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
    spec = {**MOVERSCORE_V2.spec, "model": model, "aligner": {**MOVERSCORE_V2.spec["aligner"], "n_gram": n_gram}}
    if not idf:
        spec.update(weighting="none", sep=False)
    set_by = {"encoder": _given(model=model != MOVERSCORE_V2.spec["model"], device=device is not None),
              "weighting": _given(idf=not idf), "aligner": _given(n_gram=n_gram != 1),
              "filters": _given(stop_words=bool(stop_words))}
    if stop_words and "filters" not in overrides:
        overrides["filters"] = (MoverScoreV2Strings(), StopWords(stop_words, label="moverscore-stop-words",
                                                                 unit="token"))
        set_by["filters"] = []
    return scorer_from(MOVERSCORE_V2, spec, device, overrides, set_by)


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
    spec = {**MOVERSCORE_V1.spec, "model": model, "aligner": {**MOVERSCORE_V1.spec["aligner"], "n_gram": n_gram}}
    if not idf:
        spec.update(weighting="none", sep=False)
    return scorer_from(MOVERSCORE_V1, spec, device, overrides,
                       {"encoder": _given(model=model != MOVERSCORE_V1.spec["model"], device=device is not None),
                        "weighting": _given(idf=not idf), "aligner": _given(n_gram=n_gram != 1)})


def baryscore(model: str = "bert-base-uncased", idf: bool = True, reg: float = 0.01, device: str | None = None,
              **overrides: Any) -> Scorer:
    """BaryScore (Colombo et al., 2021) with the defaults of the authors' ``BaryScoreMetric``:
    bert-base-uncased, the last five layers kept side by side (``stack``), every token taking
    part ([CLS]/[SEP] too: ``keep``), idf masses (``idf=True``; reference idf from the
    references, candidate idf from the candidates), the barycenter of the layers per text and
    the entropic (``reg``) transport cost between the two barycenters, reported as ``1 - d``.
    See :class:`~alignscore.aligners.barycenter.BaryScore` for what differs from their code.
    """
    spec = {**BARYSCORE.spec, "model": model, "aligner": {**BARYSCORE.spec["aligner"], "reg": reg}}
    if not idf:
        spec.update(weighting="none", sep=False)
    return scorer_from(BARYSCORE, spec, device, overrides,
                       {"encoder": _given(model=model != BARYSCORE.spec["model"], device=device is not None),
                        "weighting": _given(idf=not idf), "aligner": _given(reg=reg != 0.01)})


for _preset, _factory in ((BERTSCORE, bertscore), (MOVERSCORE_V2, moverscore_v2), (MOVERSCORE_V1, moverscore_v1),
                          (BARYSCORE, baryscore)):
    object.__setattr__(_preset, "factory", _factory)
    PRESETS.register(_preset.name)(_preset)  # type: ignore[arg-type]  # the registry holds the presets


__all__ = ["BARYSCORE", "BERTSCORE", "MOVERSCORE_V1", "MOVERSCORE_V2", "PRESETS", "Preset", "baryscore",
           "bertscore", "moverscore_v1", "moverscore_v2", "scorer_from"]
