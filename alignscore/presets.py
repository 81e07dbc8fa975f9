"""One-call compositions. Each preset returns a :class:`Scorer`; keyword arguments override parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .aggregators.single import SingleLayer
from .aligners.greedy import Greedy
from .encoders.huggingface import HFEncoder
from .encoders.layers import DEFAULT_MODEL
from .registry import Registry
from .rescale import Baseline
from .scorer import Scorer
from .weighting.schemes import Uniform, idf_s


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


PRESETS: Registry[Callable[..., Scorer]] = Registry("preset")
PRESETS.register("bertscore")(bertscore)
