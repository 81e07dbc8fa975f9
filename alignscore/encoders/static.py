"""Static encoders: one vector per token from a table, no context.

Two formats, told apart by what ``--model`` names (:func:`static_format`):

- a **model2vec** model directory (``config.json`` with ``"model_type": "model2vec"``,
  ``model.safetensors`` holding ``embeddings`` [V, D] and optionally per-token ``weights`` [V]
  and a ``mapping`` [V] of token ids to rows, and ``tokenizer.json``): its tokenizer decides the
  tokens (no special tokens; the unknown token is dropped, as model2vec does);
- a **word2vec text file** (``.vec``, ``.txt``; any other file name too): an optional header line
  ``N D``, then one line per word, ``word v1 ... vD``. Texts are split into words by
  :data:`WORD_PATTERN` (a run of letters, digits and underscores, or one other non-space
  character), lowercased first when ``lowercase`` is set; words missing from the table are dropped.

A text whose every token is unknown has no token left: it scores 0, and the scorer's one warning
says how many pairs have such a text.

Layer 0 is the only layer: the table's rows. Every aligner, weighting and token filter works on
these vectors; layer and aggregator choices do not apply (:meth:`Composition.resolve
<alignscore.composition.Composition.resolve>` refuses them).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, MutableMapping, Sequence

import numpy as np
import torch

from .._ops import UNIT_FLOOR
from ..errors import ConfigError, InputError, ModelLoadError
from ..textio import iter_lines
from ..tokens import Tokenized
from .base import Encoder
from .fingerprint import file_digest

# A word: a run of word characters (Unicode letters, digits, underscore), or any single
# character that is neither a word character nor a space (each punctuation mark on its own).
WORD_PATTERN = re.compile(r"\w+|[^\w\s]")
MODEL2VEC_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# texts have no length limit: one vector per token, no attention
NO_LIMIT = 1 << 30


def split_words(text: str, lowercase: bool = False) -> list[tuple[str, int, int]]:
    """The words of ``text`` as ``(word, start, end)`` character spans (:data:`WORD_PATTERN`).

    >>> [w for w, _, _ in split_words("Don't panic, Bob!", lowercase=True)]
    ['don', "'", 't', 'panic', ',', 'bob', '!']
    """
    if lowercase:
        text = text.lower()
    return [(m.group(), m.start(), m.end()) for m in WORD_PATTERN.finditer(text)]


def static_format(model: str) -> str | None:
    """``"vectors"`` for a file (word2vec text format), ``"model2vec"`` for a model2vec model
    directory, ``None`` for anything else (a Hugging Face model)."""
    path = Path(model)
    try:
        if path.is_file():
            return "vectors"
        config = path / "config.json"
        if path.is_dir() and config.is_file():
            text = config.read_text(encoding="utf-8", errors="replace")
            if '"model2vec"' in text:
                try:
                    return "model2vec" if json.loads(text).get("model_type") == "model2vec" else None
                except (ValueError, AttributeError):
                    return None
    except OSError:
        return None
    return None


def read_vectors(path: str | Path) -> tuple[list[str], np.ndarray]:
    """The words and vectors ``[V, D]`` (float32) of a word2vec text file, checked strictly.

    Raises:
        InputError: with the file and line: a ragged row, a value that is not a number, NaN or
            infinity, a zero vector (no direction: the word would not match itself), a word
            given twice, a header whose count disagrees with the rows, no rows.
    """
    path = Path(path)
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: dict[str, int] = {}
    dims: int | None = None
    header: tuple[int, int] | None = None
    lines = list(iter_lines(path))  # the whole file first: an error names its line, before any use
    blank_tail = len(lines)
    while blank_tail and not lines[blank_tail - 1].strip():
        blank_tail -= 1
    for number, line in enumerate(lines[:blank_tail], 1):
        parts = line.split()
        if not parts:
            raise InputError("an empty line among the vectors", str(path), number)
        if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            header = (int(parts[0]), int(parts[1]))
            if header[1] < 1:
                raise InputError(f"the header says {header[1]} dimensions", str(path), number)
            dims = header[1]
            continue
        if dims is None:
            dims = len(parts) - 1
            if dims < 1:
                raise InputError(f"a word without a vector: {parts[0]!r}", str(path), number)
        if len(parts) != dims + 1:
            raise InputError(f"ragged row: {len(parts) - 1} values where the {'header' if header else 'first row'} "
                             f"has {dims}", str(path), number)
        word = parts[0]
        try:
            values = np.array(parts[1:], dtype=np.float64)  # numpy parses the strings itself
        except ValueError:
            bad = next(v for v in parts[1:] if not _is_number(v))
            raise InputError(f"{word!r}: {bad!r} is not a number", str(path), number) from None
        if not np.isfinite(values).all():
            bad = next(v for v in parts[1:] if not math.isfinite(float(v)))
            raise InputError(f"{word!r}: {bad} is not a finite number", str(path), number)
        if np.abs(values).max(initial=0.0) > np.finfo(np.float32).max:
            raise InputError(f"{word!r}: a value too large for float32", str(path), number)
        if _no_direction(values.astype(np.float32)):
            raise InputError(f"{word!r}: a zero vector (length below {UNIT_FLOOR:g}) has no direction: the word "
                             "would not even match itself; remove it or give it a vector", str(path), number)
        if word in seen:
            raise InputError(f"the word {word!r} is given twice (first on line {seen[word]})", str(path), number)
        seen[word] = number
        words.append(word)
        rows.append(values.astype(np.float32))
    if header is not None and header[0] != len(words):
        raise InputError(f"the header says {header[0]} words, the file has {len(words)}", str(path), 1)
    if not words:
        raise InputError("no vectors in the file", str(path))
    return words, np.stack(rows)


def _no_direction(vectors: np.ndarray) -> np.ndarray | bool:
    """Whether each vector (the rows of ``vectors``, as float32) is too short to have a
    direction: a cosine divides by at least :data:`~alignscore._ops.UNIT_FLOOR`, so a shorter
    vector's cosine with anything, itself included, is about 0."""
    lengths = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=-1)
    return lengths < UNIT_FLOOR


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_model2vec(directory: str | Path) -> tuple[Any, np.ndarray, int | None]:
    """A model2vec model directory's tokenizer (``tokenizers.Tokenizer``), its token vectors
    ``[V, D]`` (``embeddings[mapping] * weights`` where the file has those) and its unknown
    token's id (None: none).

    The tables are checked whole before use (:func:`_checked_tables`).

    Raises:
        ModelLoadError: a file missing or unreadable, tables of the wrong shape.
        InputError: naming ``model.safetensors``: a ``mapping`` that is not one integer row
            index per token or points past the table, ``weights`` that are not one finite
            number per token, vectors that are not finite, or the zero vector of a token that
            text can produce (no direction: it would not match itself).
    """
    from safetensors import safe_open
    from tokenizers import Tokenizer

    directory = Path(directory)
    missing = [f for f in MODEL2VEC_FILES if not (directory / f).is_file()]
    if missing:
        raise ModelLoadError(f"{directory}: not a model2vec model (no {', '.join(missing)})")
    try:
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        with safe_open(str(directory / "model.safetensors"), framework="numpy") as f:
            keys = set(f.keys())
            if "embeddings" not in keys:
                raise ModelLoadError(f"{directory}/model.safetensors has no 'embeddings' table")
            table = np.asarray(f.get_tensor("embeddings"), dtype=np.float32)
            mapping = f.get_tensor("mapping") if "mapping" in keys else None
            weights = f.get_tensor("weights") if "weights" in keys else None
    except ModelLoadError:
        raise
    except Exception as exc:  # tokenizers and safetensors raise their own exception types
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"cannot load the model2vec model {str(directory)!r}: {why}") from None
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        raise ModelLoadError(f"{directory}/model.safetensors: embeddings of shape {table.shape}, not [tokens, dims]")
    unk = _unknown_token(directory / "tokenizer.json")
    unk_id = tokenizer.token_to_id(unk) if unk is not None else None
    table = _checked_tables(table, mapping, weights, tokenizer, unk_id, str(directory / "model.safetensors"))
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    if vocab > table.shape[0]:
        raise ModelLoadError(f"{directory}: the tokenizer has {vocab} tokens but the table {table.shape[0]} rows")
    return tokenizer, table, unk_id


def _checked_tables(table: np.ndarray, mapping: Any, weights: Any, tokenizer: Any, unk: int | None,
                    where: str) -> np.ndarray:
    """The token vectors ``embeddings[mapping] * weights`` of a model2vec file, after checking
    every table whole: ``mapping`` one integer row index per token, each in the table;
    ``weights`` one finite number per token; every vector finite, and none of a token that is
    scored (any of the tokenizer's but its special tokens and the unknown token ``unk``, which
    is dropped) without a direction (:func:`_no_direction`).

    Raises:
        InputError: naming ``where`` (the ``model.safetensors`` file) and the first bad entry.
    """
    if mapping is not None:
        mapping = np.asarray(mapping)
        if mapping.ndim != 1 or not np.issubdtype(mapping.dtype, np.integer):
            raise InputError(f"'mapping' must be one integer row index per token, not {mapping.dtype} of shape "
                             f"{mapping.shape}", where)
        outside = np.flatnonzero((mapping < 0) | (mapping >= len(table)))
        if len(outside):
            k = int(outside[0])
            raise InputError(f"'mapping' sends token {k} to row {int(mapping[k])}, but 'embeddings' has rows 0.."
                             f"{len(table) - 1} ({len(outside)} such token(s))", where)
        table = table[mapping.astype(np.int64)]
    if weights is not None:
        weights = np.asarray(weights)
        if weights.ndim != 1 or len(weights) != len(table) or not np.issubdtype(weights.dtype, np.number):
            raise InputError(f"'weights' must be one number per token ({len(table)}), not {weights.dtype} of shape "
                             f"{weights.shape}", where)
        if not np.isfinite(weights).all():
            raise InputError(f"the weight of token {int(np.flatnonzero(~np.isfinite(weights))[0])} is not finite",
                             where)
        table = table * weights.astype(np.float32).reshape(-1, 1)
    if not np.isfinite(table).all():
        row = int(np.flatnonzero(~np.isfinite(table).all(1))[0])
        raise InputError(f"the vector of token {row} is not finite", where)
    special = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special} | {unk}
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)  # rows past it are never looked up
    empty = [int(i) for i in np.flatnonzero(_no_direction(table[:vocab])) if int(i) not in special]
    if empty:
        name = tokenizer.id_to_token(empty[0])
        raise InputError(f"the vector of token {empty[0]} ({name!r}) is zero (length below {UNIT_FLOOR:g}): it has no "
                         f"direction, so the token would not even match itself ({len(empty)} such token(s))", where)
    return table


def _unknown_token(path: Path) -> str | None:
    try:
        model = json.loads(path.read_text(encoding="utf-8")).get("model", {})
    except (OSError, ValueError):
        return None
    unk = model.get("unk_token") if isinstance(model, dict) else None
    return unk if isinstance(unk, str) else None


@dataclass(eq=False)
class StaticEncoder(Encoder):
    """Token vectors looked up in a static table (see the module's docstring for the formats).

    Parameters
    ----------
    model : str
        A model2vec model directory, or a word2vec text file.
    lowercase : bool
        Word2vec files only: lowercase texts before splitting them into words.
    device_name : str, optional
        Where :meth:`forward` puts the vectors (default: the CPU; a lookup gains nothing from a
        GPU but the aligners after it may).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.vec")
    >>> _ = open(path, "w").write("2 2\\ncat 1 0\\ndog 0 1\\n")
    >>> enc = StaticEncoder(path)
    >>> enc.tokenize(["cat, dog"]).tokens
    [['cat', 'dog']]
    >>> enc.forward(torch.tensor([[0, 1]]), torch.ones(1, 2), [0])[0, 0].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    model: str
    lowercase: bool = False
    device_name: str | None = None
    has_layers = False
    _format: str | None = field(default=None, init=False, repr=False)
    _table: torch.Tensor | None = field(default=None, init=False, repr=False)
    _words: dict[str, int] | None = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)
    _unk: int | None = field(default=None, init=False, repr=False)
    _digest: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.model, os.PathLike):
            self.model = os.fspath(self.model)
        self._format = static_format(self.model)
        if self._format is None:
            raise ConfigError(f"{self.model!r} is neither a word2vec text file nor a model2vec model directory")
        if self.lowercase and self._format != "vectors":
            raise ConfigError("lowercase applies to word2vec text files only (a model2vec model's tokenizer "
                              "decides its own case)")

    # -- loading -----------------------------------------------------------------------------------
    def _load(self) -> torch.Tensor:
        if self._table is None:
            if self._format == "vectors":
                words, table = read_vectors(self.model)
                self._words = {w: i for i, w in enumerate(words)}
            else:
                self._tokenizer, table, self._unk = read_model2vec(self.model)
            self._table = torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32))
        return self._table

    @property
    def table(self) -> torch.Tensor:
        """The token vectors ``[V, D]`` (row ``i``: token id ``i``)."""
        return self._load()

    @property
    def format(self) -> str:
        """``"vectors"`` (word2vec text) or ``"model2vec"``."""
        assert self._format is not None
        return self._format

    # -- properties --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.model

    @property
    def num_layers(self) -> int:
        return 0

    @property
    def vocab_size(self) -> int:
        return int(self._load().shape[0])

    @property
    def pad_id(self) -> int:
        return 0  # masked out; any row will do

    @property
    def model_max_length(self) -> int:
        return NO_LIMIT

    def default_layer(self) -> int | None:
        return 0

    @property
    def device(self) -> torch.device:
        return torch.device(self.device_name or "cpu")

    def digest(self) -> str:
        """SHA-256 of the table's files (the vectors file; a model2vec model's tensors and tokenizer)."""
        if self._digest is None:
            self._digest = self._files_digest(None)
        return self._digest

    def _files_digest(self, memo: MutableMapping[str, str] | None) -> str:
        import hashlib

        if self._format == "vectors":
            return file_digest(Path(self.model), memo)
        parts = [file_digest(Path(self.model) / name, memo) for name in ("model.safetensors", "tokenizer.json")]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()

    def signature(self) -> str:
        """``static:<file or folder name>#<first 12 hex digits of the table's digest>[+lowercase]``."""
        return (f"static:{Path(self.model).name}#{self.digest()[:12]}"
                + ("+lowercase" if self.lowercase else ""))

    def fingerprint(self, memo: MutableMapping[str, str] | None = None) -> str:
        return f"static|{self._files_digest(memo)}|lowercase={self.lowercase}"

    # -- tokenization ------------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """The known tokens of each text (no special tokens); unknown ones are dropped. A text
        left with none scores 0: the scorer's one warning counts those pairs."""
        self._load()
        out = Tokenized([], [], [], [])
        for text in texts:
            ids, starts, surface, tokens = (self._words_of(text) if self._format == "vectors"
                                            else self._subwords_of(text))
            out.ids.append(ids)
            out.special.append([False] * len(ids))
            out.word_start.append(starts)
            out.surface.append(surface)
            out.tokens.append(tokens)
        return out

    def _words_of(self, text: str) -> tuple[list[int], list[bool], list[str], list[str]]:
        assert self._words is not None
        ids, surface, tokens = [], [], []
        for word, start, end in split_words(text, self.lowercase):
            i = self._words.get(word)
            if i is not None:
                ids.append(i)
                tokens.append(word)
                surface.append(text[start:end])
        return ids, [True] * len(ids), surface, tokens

    def _subwords_of(self, text: str) -> tuple[list[int], list[bool], list[str], list[str]]:
        stripped = text.strip()
        enc = self._tokenizer.encode(stripped, add_special_tokens=False)
        ids, starts, surface, tokens = [], [], [], []
        prev = None
        for i, w, (begin, end), piece in zip(enc.ids, enc.word_ids, enc.offsets, enc.tokens):
            first = w is None or w != prev
            prev = w
            if i == self._unk:
                continue
            ids.append(i)
            starts.append(first)
            surface.append(stripped[begin:end])
            tokens.append(piece)
        return ids, starts, surface, tokens

    # -- forward -----------------------------------------------------------------------------------
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                layers: Sequence[int]) -> torch.Tensor:
        """The table's rows ``[1, B, T, D]`` (layer 0; padding rows are whatever row ``pad_id`` is)."""
        bad = [k for k in layers if k != 0]
        if bad:
            raise ConfigError(f"layer {bad[0]} does not exist: a static table has one vector per token (layer 0)")
        rows = self._load()[input_ids.cpu()].unsqueeze(0)
        return rows.expand(len(layers), *rows.shape[1:]).to(self.device)


__all__ = ["NO_LIMIT", "WORD_PATTERN", "StaticEncoder", "read_model2vec", "read_vectors", "split_words",
           "static_format"]
