"""From a :class:`~alignscore.config.spec.RunSpec` to what runs.

:func:`build` makes the :class:`~alignscore.scorer.Scorer` and checks what needs the model's
configuration and tokenizer (not its weights) before any text is encoded.
"""

from __future__ import annotations

from ..encoders import Encoder, encoder_of
from ..errors import ConfigError
from ..scorer import Scorer
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
    >>> spec, given = run_compiled({"model": "all-MiniLM-L6-v2", "layer": 9})
    >>> check_model(build(spec, check=False), given)
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: layer=: layer 9 does not exist: the model has layers 0..6 ...
    """
    try:
        scorer.scoring_encoder().check()
        scorer.resolved()
    except ConfigError as exc:
        raise (provenance or Provenance()).relabel(exc) from None


__all__ = ["build", "check_model"]
