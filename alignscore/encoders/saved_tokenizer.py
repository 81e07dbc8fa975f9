"""The tokenizer without transformers: the backend transformers builds, saved once and checked.

alignscore tokenizes with the ``tokenizers`` library (the Rust tokenizer that transformers' fast
tokenizers wrap); what transformers adds is how the tokenizer is built from the model's files
(``AutoTokenizer``, with the options the encoder gives it) and a few facts, and importing its
tokenizer stack costs seconds per process. So the first run for a model builds the tokenizer through
transformers and saves what it built (``tokenizers.Tokenizer.to_str()``) with the facts the encoder
answers from it (layer count, vocabulary size with added tokens, pad id, the model's token limit) in
``<export_dir>/<model fingerprint>.tokenizer.json``. The file is written only when the reloaded
tokenizer splits a set of probe texts exactly as transformers' does (ids, token strings, character
offsets, word ids, special-token mask). Later runs read it and never import transformers. It records
the transformers and tokenizers versions it was made with: under another version of either (which
could build or read the tokenizer differently) it is made again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .._version import installed_version
from .exports import PROBE_TEXTS, write_atomically

SUFFIX = ".tokenizer.json"
FORMAT = 1

# Texts the saved tokenizer must split as transformers' does: the export probes, and what
# normalizers and pre-tokenizers treat specially (accents, case, CJK, emoji, spacing, digits).
CHECK_TEXTS = PROBE_TEXTS + (
    "Héllo  WÖRLD — naïve café, ÇA VA? Straße",
    "日本語のテキストと中文，한국어 and emoji 🙂👍🏽",
    "  tabs\tand\nnewlines, 3.14159 and 1,000,000 x2 ",
    "don't can't it's (a) [b] {c} <d> \"e\" 'f' @user #tag http://example.org/x?y=1",
)


@dataclass(frozen=True)
class SavedTokenizer:
    """A model's backend tokenizer (``tokenizers.Tokenizer``) and the facts read with it."""

    backend: Any
    num_layers: int | None  # None: the config does not say
    vocab_size: int
    pad_id: int
    limit: int  # the model's own token limit, special tokens included


def tokenizer_path(export_dir: Path, fingerprint: str) -> Path:
    """``<export_dir>/<fingerprint>.tokenizer.json``: beside the model's traces and graphs."""
    return Path(export_dir) / f"{fingerprint[:40]}{SUFFIX}"


def _versions() -> dict[str, str]:
    """The versions that decide how a tokenizer is built from the model's files and read back."""
    return {name: installed_version(name) for name in ("transformers", "tokenizers")}


def load_saved(path: Path) -> SavedTokenizer | None:
    """The tokenizer saved at ``path``; None when there is none, it is damaged, or it was made under
    other versions of transformers or tokenizers."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT or data.get("versions") != _versions():
            return None
        from tokenizers import Tokenizer

        layers = data["num_layers"]
        return SavedTokenizer(Tokenizer.from_str(data["backend"]), None if layers is None else int(layers),
                              int(data["vocab_size"]), int(data["pad_id"]), int(data["limit"]))
    except Exception:  # noqa: BLE001 - missing, damaged or foreign: built through transformers again
        return None


def save(path: Path, made: SavedTokenizer) -> bool:
    """Write ``made`` (built through transformers) to ``path`` if its backend, saved and read back,
    splits :data:`CHECK_TEXTS` exactly as ``made.backend`` does. False when it does not, or when
    the folder cannot be written (then every run builds the tokenizer through transformers)."""
    from tokenizers import Tokenizer

    text = made.backend.to_str()
    if _splits(Tokenizer.from_str(text)) != _splits(made.backend):
        return False
    data = {"format": FORMAT, "versions": _versions(), "num_layers": made.num_layers, "vocab_size": made.vocab_size,
            "pad_id": made.pad_id, "limit": made.limit, "backend": text}
    try:
        write_atomically(path, lambda tmp: Path(tmp).write_text(json.dumps(data), encoding="utf-8"))
    except OSError:
        return False
    return True


def encode_whole(backend: Any, texts: Sequence[str]) -> list[Any]:
    """The backend's encodings of ``texts`` with special tokens added, neither truncated nor
    padded (whatever the backend was set to before): how alignscore tokenizes."""
    backend.no_truncation()
    backend.no_padding()
    return backend.encode_batch(list(texts), add_special_tokens=True)


def _splits(backend: Any) -> list[tuple]:
    """Everything alignscore reads from a tokenization of :data:`CHECK_TEXTS`."""
    return [(e.ids, e.tokens, e.offsets, e.word_ids, e.special_tokens_mask)
            for e in encode_whole(backend, CHECK_TEXTS)]


__all__ = ["CHECK_TEXTS", "SavedTokenizer", "encode_whole", "load_saved", "save", "tokenizer_path"]
