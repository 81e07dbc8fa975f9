"""The Hugging Face ``evaluate`` module (``pip install 'alignscore[evaluate]'``): the folder
:data:`EVALUATE_MODULE`, which ``evaluate.load`` accepts as it is, offline::

    import evaluate
    from alignscore.integrations.hf_evaluate import EVALUATE_MODULE

    metric = evaluate.load(str(EVALUATE_MODULE))
    metric.compute(predictions=["a cat sat"], references=["the cat sat down"], model="all-MiniLM-L6-v2")

``compute`` takes the options of ``alignscore.score`` (those of ``alignscore score`` by their
Python names: ``model``, ``lang``, ``layer``, ``preset``, ``idf``, ``weighting``, ``aligner``, ...:
:data:`OPTIONS`), compiled to the same spec, and returns the same numbers: ``{output: [float per
prediction], "signature": str}``. References are one text or a list of texts per prediction.
Scorers are built once per run spec and kept by the module instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..config import options, run_compiled
from ..config import PRESETS
from ..scorer import Scorer
from ..config import RunSpec, build

__all__ = ["CITATION", "DESCRIPTION", "EVALUATE_MODULE", "INPUTS", "OPTIONS", "compute"]

#: the folder to pass to ``evaluate.load`` (``evaluate`` wants ``<folder>/<folder name>.py``)
EVALUATE_MODULE = Path(__file__).resolve().with_name("alignscore")

#: the options ``compute`` takes (the runtime's progress bars aside: always off)
OPTIONS = tuple(sorted(options()))

DESCRIPTION = """\
alignscore: text-generation metrics that align contextual token embeddings. BERTScore (greedy
matching of cosine similarities, the default), MoverScore (optimal transport) and their ablations
are compositions of interchangeable parts: encoder, layer aggregator, token filter, weighting,
aligner. Scores are bert_score's and moverscore's numbers for their compositions.
"""

CITATION = """\
@inproceedings{bert-score,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Tianyi Zhang and Varsha Kishore and Felix Wu and Kilian Q. Weinberger and Yoav Artzi},
  booktitle={International Conference on Learning Representations},
  year={2020}
}
@inproceedings{zhao2019moverscore,
  title={MoverScore: Text Generation Evaluating with Contextualized Embeddings and Earth Mover Distance},
  author={Wei Zhao and Maxime Peyrard and Fei Liu and Yang Gao and Christian M. Meyer and Steffen Eger},
  booktitle={EMNLP-IJCNLP},
  year={2019}
}
"""

INPUTS = f"""
Args:
    predictions: candidate texts.
    references: one reference text, or a list of reference texts, per prediction.
    model: Hugging Face hub id or local directory (default roberta-large); or
    lang: the model BERTScore picks for a language (en, zh, ...).
    layer: the layer (default: the model's tuned layer).
    preset: {", ".join(PRESETS.names())}; the options below override its parts.
    idf: True for idf from the references (weighting="idf-S").
    other options, as `alignscore score` names them with underscores: {", ".join(OPTIONS)}.
Returns:
    one list of scores per output of the composition (precision, recall, f1 for greedy; score
    for optimal transport), one score per prediction, and the signature of every setting.
Examples:
    >>> metric = evaluate.load(path_to_this_folder)
    >>> metric.compute(predictions=["a cat sat"], references=[["the cat sat", "a cat"]],
    ...                model="all-MiniLM-L6-v2", idf=False)["f1"]
"""


def scorer(given: dict[str, Any], scorers: dict[RunSpec, Scorer]) -> Scorer:
    """The scorer of the options ``given`` (kept in ``scorers``: built once per run spec)."""
    spec, provenance = run_compiled(given, where="alignscore (evaluate)")
    if spec not in scorers:
        scorers[spec] = build(spec, provenance=provenance)
    return scorers[spec]


def compute(predictions: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]],
            options: dict[str, Any], scorers: dict[RunSpec, Scorer]) -> dict[str, Any]:
    """What the module's ``_compute`` returns: ``{output: [score per prediction], "signature": ...}``."""
    scores = scorer(options, scorers).score(list(predictions), list(references))
    return {**{name: values.tolist() for name, values in scores.metrics.items()}, "signature": str(scores.signature)}
