"""From a :class:`~alignscore.config.spec.RunSpec` to what runs.

:func:`build` makes the :class:`~alignscore.scorer.Scorer` and checks what needs the model's
configuration and tokenizer (not its weights) before any text is encoded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..encoders.base import Encoder
from ..encoders.huggingface import HFEncoder
from ..encoders.spec import VECTOR_SUFFIXES, EncoderSpec
from ..encoders.static import StaticEncoder
from ..errors import ConfigError
from ..scorer import Scorer
from ..settings import SettingError, keyword
from .schema import MODEL_OPTIONS
from .sources import Provenance
from .spec import RunSpec


def build(spec: RunSpec, encoder: Encoder | None = None, check: bool = True,
          provenance: Provenance | None = None) -> Scorer:
    """The :class:`Scorer` of ``spec``: its encoder, composition, runtime and cache.

    Parameters
    ----------
    spec : the run.
    encoder : stands in for the encoder the spec names (its model is not looked up).
    check : run the checks that need the model's configuration now (:func:`check_model`).
    provenance : how the options were given, to name them in errors.

    Returns
    -------
    Scorer
        Nothing encoded; the model's weights load on first use.

    Examples
    --------
    >>> from alignscore.config import run_spec
    >>> build(run_spec({"model": "all-MiniLM-L6-v2"})).resolved().aggregator  # the model's default layer
    SingleLayer(layer=4)
    """
    encoder = encoder if encoder is not None else encoder_of(spec.encoder, spec.runtime.device, spec.runtime.name)
    scorer = Scorer(encoder, spec.composition, spec.runtime, spec.cache.build() if spec.cache is not None else None)
    if check:
        check_model(scorer, provenance)
    return scorer


def check_model(scorer: Scorer, provenance: Provenance | None = None) -> None:
    """The checks that need the model's configuration and tokenizer (not its weights): the
    composition resolved for the model (its layers exist; a default layer where none is given; a
    baseline row for that layer) and the encoder's own limits.

    Parameters
    ----------
    scorer : the scorer to check (:func:`build` with ``check=False``).
    provenance : names the options in errors (:meth:`Provenance.relabel`; default: as keywords).

    Examples
    --------
    >>> from alignscore.config import run_compiled
    >>> spec, given = run_compiled({"model": "all-MiniLM-L6-v2", "layer": 9}, "flag")
    >>> check_model(build(spec, check=False), given)
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: --layer: layer 9 does not exist: the model has layers 0..6 ...
    """
    try:
        scorer.scoring_encoder().check()
        scorer.resolved()
    except ConfigError as exc:
        raise (provenance or Provenance()).relabel(exc) from None


def encoder_of(e: EncoderSpec, device: str | None = None, name: Callable[[str], str] = keyword) -> Encoder:
    """The encoder an :class:`EncoderSpec` names (nothing loaded yet).

    Parameters
    ----------
    e : the encoder's description.
    device : where it runs (``None``: as the runtime decides).
    name : how its warnings name the run's options (:meth:`~alignscore.runtime.Runtime.name`).

    Returns
    -------
    Encoder
        A :class:`~alignscore.encoders.static.StaticEncoder` where the model is a static table (a
        word2vec text file, a model2vec directory), else an :class:`HFEncoder`.

    Examples
    --------
    >>> encoder_of(EncoderSpec("all-MiniLM-L6-v2"), "cpu")
    HFEncoder(model='all-MiniLM-L6-v2', device_name='cpu', ...)
    """
    if e.static is not None:
        return StaticEncoder(e.model, lowercase=e.lowercase, device_name=device)
    if Path(e.model).suffix in VECTOR_SUFFIXES:  # meant as a vectors file: never a hub id to download
        raise SettingError(MODEL_OPTIONS[0], f"no such word-vector file: {e.model}")
    return HFEncoder(e.model, device_name=device, max_length=e.max_length, revision=e.revision,
                     dtype=e.dtype, long_texts=e.long_texts, stride=e.window_stride, naming=name)


__all__ = ["build", "check_model", "encoder_of"]
