"""Named compositions: each preset is a :class:`~alignscore.spec.RunSpec` (its model and
composition), which ``--preset`` and the preset functions (:mod:`alignscore.api`:
``bertscore()``, ``moverscore_v2()``, ...) layer options on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from .registry import Registry
from .spec import RunSpec


@dataclass(frozen=True)
class Preset:
    """A named run: its ``spec`` (the model included) and what it reproduces."""

    name: str
    spec: RunSpec
    doc: str

    @classmethod
    def of(cls, name: str, table: Mapping[str, Any], doc: str) -> "Preset":
        return cls(name, RunSpec.from_table(table, where=f"preset {name}"), doc)


PRESETS: Registry[Preset] = Registry("preset")

BERTSCORE = Preset("bertscore", RunSpec(), "BERTScore (Zhang et al., 2020): one layer, greedy matching of cosine "
                                          "similarities")
MOVERSCORE_V2 = Preset.of(
    "moverscore-v2",
    {"model": "distilbert-base-uncased", "layer": -1, "special_tokens": "keep", "filters": ["ms2-punct"],
     "weighting": {"name": "idf-S", "sep": True}, "aligner": {"name": "wmd", "cost": "euclidean", "score": "1-d"},
     "multi_ref": "mean"},
    "the moverscore 1.0.3 package's moverscore_v2.word_mover_score")
MOVERSCORE_V1 = Preset.of(
    "moverscore-v1",
    {"model": "bert-base-uncased",
     "aggregator": {"name": "pmeans", "layers_spec": [-5, -4, -3, -2, -1], "powers": [-math.inf, 1.0, math.inf],
                    "normalize": True},
     "special_tokens": "keep", "filters": ["rm"], "weighting": {"name": "idf-S", "sep": True},
     "aligner": {"name": "wmd", "cost": "sqeuclidean", "score": "1-d"}, "multi_ref": "mean"},
    "MoverScore as the paper computes it (moverscore.py)")
BARYSCORE = Preset.of(
    "baryscore",
    {"model": "bert-base-uncased", "aggregator": {"name": "stack", "layers_spec": [-5, -4, -3, -2, -1]},
     "special_tokens": "keep", "weighting": {"name": "idf-S", "sep": True},
     "aligner": {"name": "baryscore", "layers": 5, "reg": 0.01}},
    "BaryScore (Colombo et al., 2021): Wasserstein barycenters of the last five layers")

for _preset in (BERTSCORE, MOVERSCORE_V2, MOVERSCORE_V1, BARYSCORE):
    PRESETS.register(_preset.name)(_preset)  # type: ignore[arg-type]  # the registry holds the presets

__all__ = ["BARYSCORE", "BERTSCORE", "MOVERSCORE_V1", "MOVERSCORE_V2", "PRESETS", "Preset"]
