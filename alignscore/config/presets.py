"""Named runs: each preset is a mapping of options (the same names as everywhere), the lowest
source of a run that ``--preset`` and the preset functions (:mod:`alignscore.api`:
``bertscore()``, ``moverscore_v2()``, ...) layer options on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..registry import Registry


@dataclass(frozen=True)
class Preset:
    """A named run: its ``options`` (the model included) and what it reproduces.

    Parameters
    ----------
    name : the name ``--preset``, ``preset =`` and ``preset=`` take.
    options : the options, by the names every way in uses (the lowest source of a run).
    doc : what it reproduces.

    Examples
    --------
    A preset is the base of a run: later options override it, in a run file, a grid row or a
    space entry as on the command line.

    >>> PRESETS.get("moverscore-v2").options["aligner"]
    'wmd'
    >>> from alignscore.config import run_spec
    >>> run_spec({"preset": "moverscore-v2", "aligner": "sinkhorn"}).composition.aligner.cost
    'euclidean'
    """

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    doc: str = ""


PRESETS: Registry[Preset] = Registry("preset")

# each preset's options as keywords: the same names as ``alignscore.score(**options)``
_PRESETS = (
    Preset("bertscore", {}, "BERTScore (Zhang et al., 2020): one layer, greedy matching of cosine similarities"),
    Preset("moverscore-v2", dict(
        model="distilbert-base-uncased", layer=-1, special_tokens="keep", filters=["ms2-punct"], weighting="idf-S",
        sep=True, aligner="wmd", cost="euclidean", score_form="1-d", multi_ref="mean"),
        "the moverscore 1.0.3 package's moverscore_v2.word_mover_score"),
    Preset("moverscore-v1", dict(
        model="bert-base-uncased", aggregator="pmeans", layers=[-5, -4, -3, -2, -1], powers=[-math.inf, 1.0, math.inf],
        normalize=True, special_tokens="keep", filters=["rm"], weighting="idf-S", sep=True, aligner="wmd",
        cost="sqeuclidean", score_form="1-d", multi_ref="mean"),
        "MoverScore as the paper computes it (moverscore.py)"),
    Preset("baryscore", dict(
        model="bert-base-uncased", aggregator="stack", layers=[-5, -4, -3, -2, -1], special_tokens="keep",
        weighting="idf-S", sep=True, aligner="baryscore", reg=0.01),
        "BaryScore (Colombo et al., 2021): Wasserstein barycenters of the last five layers"),
    Preset("xmoverscore", dict(
        model="bert-base-multilingual-cased", layer=8, special_tokens="keep", weighting="none", aligner="wmd",
        n_gram=2, cost="euclidean", score_form="1/(1+d)", flow_dropout=0.3, ngram_mean="states"),
        "XMoverScore (Zhao et al., 2020) against sources: mBERT layer 8, WMD on bigrams (means of the layer's "
        "states) with uniform weights, flow dropout 0.3 and 1/(1+d) (the reference code's); add remap = FILE (alignscore remap) for its "
        "remapping and lm = MODEL for its target-side language-model term (off without one; weight lm_weight, "
        "the paper's 0.1)"),
)
for _preset in _PRESETS:
    PRESETS.register(_preset.name)(_preset)  # type: ignore[arg-type]  # the registry holds the presets

__all__ = ["PRESETS", "Preset"]
