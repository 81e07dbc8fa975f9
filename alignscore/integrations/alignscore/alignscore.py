"""alignscore as a Hugging Face ``evaluate`` module: ``evaluate.load(<this folder>)``.

The module is a thin shell; what it computes is :mod:`alignscore.integrations.hf_evaluate`.
"""

import datasets
import evaluate

from alignscore.integrations.hf_evaluate import CITATION, DESCRIPTION, INPUTS, compute

_FEATURES = [
    datasets.Features({"predictions": datasets.Value("string", id="sequence"),
                       "references": datasets.Sequence(datasets.Value("string", id="sequence"), id="references")}),
    datasets.Features({"predictions": datasets.Value("string", id="sequence"),
                       "references": datasets.Value("string", id="sequence")}),
]


@evaluate.utils.file_utils.add_start_docstrings(DESCRIPTION, INPUTS)
class Alignscore(evaluate.Metric):  # the module name, "alignscore", comes from the class name
    """Text-generation metrics that align contextual token embeddings (BERTScore by default)."""

    def _info(self):
        return evaluate.MetricInfo(description=DESCRIPTION, citation=CITATION, inputs_description=INPUTS,
                                   features=_FEATURES, module_type="metric")

    def _compute(self, predictions, references, **options):
        return compute(predictions, references, options, self.__dict__.setdefault("_alignscore_scorers", {}))
