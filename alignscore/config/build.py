"""From a :class:`~alignscore.config.spec.RunSpec` to what runs.

:func:`build` makes the :class:`~alignscore.scorer.Scorer` and checks what needs the model's
configuration and tokenizer (not its weights) before any text is encoded.
"""

from __future__ import annotations

from pathlib import Path

from ..encoders.base import Encoder
from ..encoders.huggingface import HFEncoder
from ..encoders.spec import VECTOR_SUFFIXES, EncoderSpec
from ..encoders.static import StaticEncoder
from ..errors import ConfigError
from ..scorer import Scorer
from ..settings import SettingError
from .schema import MODEL_OPTIONS
from .sources import Provenance
from .spec import RunSpec


def build(spec: RunSpec, encoder: Encoder | None = None, check: bool = True,
          provenance: Provenance | None = None) -> Scorer:
    """The :class:`Scorer` of ``spec``: its encoder (``encoder``, when given, stands in for the
    one the spec names), composition, runtime and cache. With ``check``, the model-dependent
    checks run now (:func:`check_model`), naming options as ``provenance`` says they were given."""
    if encoder is None:
        encoder = encoder_of(spec.encoder, spec.runtime.device)
    scorer = Scorer(encoder, spec.composition, spec.runtime,
                    spec.cache.build() if spec.cache is not None else None)
    if check:
        check_model(scorer, provenance)
    return scorer


def check_model(scorer: Scorer, provenance: Provenance | None = None) -> None:
    """The checks that need the model's configuration and tokenizer (not its weights): the
    composition resolved for the model (its layers exist; a default layer where none is given; a
    baseline row for that layer) and the encoder's own limits. Errors name the options as
    ``provenance`` says they were given (:meth:`Provenance.relabel`; by default as keywords)."""
    try:
        scorer.scoring_encoder().check()
        scorer.resolved()
    except ConfigError as exc:
        raise (provenance or Provenance()).relabel(exc) from None


def encoder_of(e: EncoderSpec, device: str | None = None) -> Encoder:
    """The encoder an :class:`EncoderSpec` names (nothing loaded yet): a
    :class:`~alignscore.encoders.static.StaticEncoder` where the model is a static table (a
    word2vec text file, a model2vec directory), else an :class:`HFEncoder`."""
    if e.static is not None:
        return StaticEncoder(e.model, lowercase=e.lowercase, device_name=device)
    if Path(e.model).suffix in VECTOR_SUFFIXES:  # meant as a vectors file: never a hub id to download
        raise SettingError(MODEL_OPTIONS[0], f"no such word-vector file: {e.model}")
    return HFEncoder(e.model, device_name=device, max_length=e.max_length, revision=e.revision,
                     dtype=e.dtype, long_texts=e.long_texts, stride=e.window_stride)


__all__ = ["build", "check_model", "encoder_of"]
