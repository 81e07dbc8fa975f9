"""One-call compositions. Each preset returns a :class:`Scorer`; keyword arguments override parts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

from .aggregators.pmeans import PowerMeans
from .aggregators.single import SingleLayer
from .aggregators.stack import LayerStack
from .aligners.barycenter import BaryScore
from .aligners.greedy import Greedy
from .aligners.optimal import WMD
from .encoders.huggingface import HFEncoder
from .encoders.layers import DEFAULT_MODEL
from .filters.base import TokenFilter
from .filters.lexical import MoverScoreV2Strings, RemoveSubwordsPunct, StopWords
from .registry import Registry
from .rescale import Baseline
from .scorer import Scorer
from .weighting.schemes import Idf, Uniform, idf_s


def bertscore(model: str = DEFAULT_MODEL, layer: int | None = None, idf: bool = False,
              baseline: str | Path | Baseline | None = None, device: str | None = None,
              **scorer_kwargs: Any) -> Scorer:
    """BERTScore (Zhang et al., 2020): one layer, greedy matching of cosine similarities,
    optionally idf from the references (``idf=True`` is idf-S) and baseline rescaling.

    >>> scorer = bertscore("all-MiniLM-L6-v2", layer=4)            # doctest: +SKIP
    >>> scorer.score(["a cat sat"], ["the cat sat down"]).f1          # doctest: +SKIP
    """
    if baseline is not None and not isinstance(baseline, Baseline):
        baseline = Baseline.read(baseline)
    return Scorer(encoder=HFEncoder(model, device_name=device), aggregator=SingleLayer(layer),
                  weighting=idf_s() if idf else Uniform(), aligner=Greedy(), special_tokens="match-only",
                  baseline=baseline, **scorer_kwargs)


def moverscore_v2(model: str = "distilbert-base-uncased", idf: bool = True, n_gram: int | str = 1,
                  stop_words: Sequence[str] = (), device: str | None = None, **scorer_kwargs: Any) -> Scorer:
    """MoverScore as the ``moverscore`` 1.0.3 package's ``moverscore_v2.word_mover_score``
    computes it (to float tolerance; see tests/test_moverscore_parity.py):

    - the last layer's token vectors, unit-normalised; [CLS] and [SEP] take part (``keep``);
    - tokens whose string is one ASCII punctuation character or contains "##" get no mass
      (``ms2-punct``, its exact string test), nor do ``stop_words`` (exact token strings);
    - ``idf=True``: reference tokens weighed by the idf of the references, candidate tokens by
      the idf of the candidates (``Idf(sep=True)``; [CLS]/[SEP] then get idf 0); ``idf=False``:
      mass 1 for every token (``defaultdict(lambda: 1.)``);
    - exact transport with Euclidean cost, ``score = 1 - WMD``.

    Its default model is distilbert-base-uncased. One difference: where every token of a text
    is filtered out, moverscore_v2 returns 1 (zero transport cost) and this preset 0, as every
    aligner here does for a text with nothing to align.
    """
    scorer_kwargs.setdefault("multi_ref", "mean")  # MoverScore's examples average over references
    filters: list[TokenFilter] = [MoverScoreV2Strings()]
    if stop_words:
        filters.append(StopWords(stop_words, name="moverscore-stop-words", unit="token"))
    return Scorer(encoder=HFEncoder(model, device_name=device), aggregator=SingleLayer(-1),
                  filters=tuple(filters), special_tokens="keep",
                  weighting=Idf(sep=True) if idf else Uniform(),
                  aligner=WMD(cost="euclidean", score="1-d", n_gram=n_gram), **scorer_kwargs)


def moverscore_v1(model: str = "bert-base-uncased", idf: bool = True, n_gram: int | str = 1,
                  device: str | None = None, **scorer_kwargs: Any) -> Scorer:
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
    scorer_kwargs.setdefault("multi_ref", "mean")
    return Scorer(encoder=HFEncoder(model, device_name=device),
                  aggregator=PowerMeans((-5, -4, -3, -2, -1), (-math.inf, 1.0, math.inf), normalize=True),
                  filters=(RemoveSubwordsPunct(),), special_tokens="keep",
                  weighting=Idf(sep=True) if idf else Uniform(),
                  aligner=WMD(cost="sqeuclidean", score="1-d", n_gram=n_gram), **scorer_kwargs)


def baryscore(model: str = "bert-base-uncased", idf: bool = True, reg: float = 0.01, device: str | None = None,
              **scorer_kwargs: Any) -> Scorer:
    """BaryScore (Colombo et al., 2021) with the defaults of the authors' ``BaryScoreMetric``:
    bert-base-uncased, the last five layers kept side by side (``LayerStack``), every token
    taking part ([CLS]/[SEP] too: ``keep``), idf masses (``idf=True``; reference idf from the
    references, candidate idf from the candidates), the barycenter of the layers per text and
    the entropic (``reg``) transport cost between the two barycenters, reported as ``1 - d``.
    See :class:`~alignscore.aligners.barycenter.BaryScore` for what differs from their code.
    """
    return Scorer(encoder=HFEncoder(model, device_name=device), aggregator=LayerStack((-5, -4, -3, -2, -1)),
                  special_tokens="keep", weighting=Idf(sep=True) if idf else Uniform(),
                  aligner=BaryScore(layers=5, reg=reg), **scorer_kwargs)


PRESETS: Registry[Callable[..., Scorer]] = Registry("preset")
PRESETS.register("bertscore")(bertscore)
PRESETS.register("moverscore-v2")(moverscore_v2)
PRESETS.register("moverscore-v1")(moverscore_v1)
PRESETS.register("baryscore")(baryscore)
