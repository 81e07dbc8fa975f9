"""One description of a run: which encoder, which composition, how to run it and which cache.

Every way in compiles to a :class:`RunSpec` (:mod:`alignscore.config.compile`), and one writer
writes it back whole (:meth:`RunSpec.to_mapping`, :meth:`RunSpec.toml`): every setting of the
encoder, of each part chosen, of the composition, of the runtime and of the cache, under the
options' names, so that the file fixes every number (``None`` settings, such as "the model's
default layer", are named in the file's comment instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..cache import CacheSpec
from ..composition import Composition
from ..encoders.spec import EncoderSpec
from ..errors import ConfigError
from ..filters import FILTERS
from ..runtime import Runtime
from ..settings import settings_of
from ..weighting.schemes import Corpus
from .files import toml_text
from .schema import STAGES


@dataclass(frozen=True)
class RunSpec:
    """Everything a run is: the :class:`~alignscore.encoders.spec.EncoderSpec`, the
    :class:`~alignscore.composition.Composition` (its parts are their own descriptions), the
    :class:`~alignscore.runtime.Runtime` (never changes a number beyond float rounding) and the
    cache (None: none). The default is BERTScore's. ``labels`` says how each option was given
    (``--layer``, ``layer=``, ``run.toml:3: layer``) and ``style`` how to name one that was not
    (``"flag"``, ``"keyword"``, ``"key"``), for the checks that need the model
    (:func:`alignscore.config.build.build`); neither takes part in equality."""

    encoder: EncoderSpec = field(default_factory=EncoderSpec)
    composition: Composition = field(default_factory=Composition)
    runtime: Runtime = field(default_factory=Runtime)
    cache: CacheSpec | None = None
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    style: str = field(default="keyword", compare=False, repr=False)

    def __post_init__(self) -> None:
        for name, kind in (("encoder", EncoderSpec), ("composition", Composition), ("runtime", Runtime)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{name} must be a {kind.__name__}, not {type(getattr(self, name)).__name__}")
        if self.cache is not None and not isinstance(self.cache, CacheSpec):
            raise ConfigError(f"cache must be a CacheSpec, not {type(self.cache).__name__}")
        self.composition.check_encoder(self.encoder.static, self.encoder.model)
        self.encoder.check_device(self.runtime.device)
        self.encoder.locate()  # last: every value and pairing is reported before the model's absence

    def to_mapping(self) -> dict[str, Any]:
        """The whole run as options (every setting that has a value; files as absolute paths)."""
        out: dict[str, Any] = {}
        for s in settings_of(EncoderSpec):
            out[s.name] = getattr(self.encoder, s.name)
        c = self.composition
        for stage in STAGES:
            part = getattr(c, stage)
            out[stage] = STAGES[stage].name_of(part)
            out.update(_settings(part))
            if stage == "aggregator":
                out["special_tokens"] = c.roles.special
                out["filters"] = [FILTERS.name_of(f) for f in c.roles.filters]
                for f in c.roles.filters:
                    out.update(_settings(f))
        out["metric"] = c.metric
        out["multi_ref"] = c.multi_ref
        out["rescale"] = c.baseline is not None
        if c.baseline is not None:
            if c.baseline.source is None:
                raise ConfigError("a run with a baseline made in Python (not read from a file) cannot be written: "
                                  "write the baseline to a file and give baseline = FILE")
            out["baseline"] = c.baseline.source
        for s in settings_of(Runtime):
            if s.decl.option:
                out[s.name] = getattr(self.runtime, s.name)
        if self.cache is not None:
            out.update(cache=self.cache.cache, cache_size=self.cache.cache_size, cache_timeout=self.cache.cache_timeout)
        return {k: v for k, v in out.items() if v is not None}

    def toml(self, comment: str | None = None, changes: Mapping[str, Any] | None = None) -> str:
        """:meth:`to_mapping` as TOML, with ``changes`` to its values (an in-memory corpus
        written to a file); the comment lists the settings left to the model or the machine."""
        data = {**self.to_mapping(), **(changes or {})}
        unset = [f"{name} = {what}" for name, what in (
            ("layer", "the model's tuned layer (BERTScore's table)"), ("max_length", "the model's own limit"),
            ("device", "CUDA when available, else the CPU")) if name not in data and _applies(self, name)]
        notes = (comment + "\n" if comment else "") + ("Not set here (decided when the run starts): "
                                                       + "; ".join(unset) if unset else "")
        return toml_text({k: _plain(v) for k, v in data.items()}, notes.strip() or None)

    def files(self) -> list[str]:
        """The input files the run reads besides its texts (stop words, idf corpus, baseline,
        a word-vector table): no output may overwrite them, and a resumed output must have been
        made from the same contents."""
        out = []
        for f in self.composition.roles.filters:
            if isinstance(getattr(f, "stopwords", None), str):
                out.append(f.stopwords)
        corpus = getattr(self.composition.weighting, "idf_corpus", None)
        if isinstance(corpus, str):
            out.append(corpus)
        if self.composition.baseline is not None and self.composition.baseline.source:
            out.append(self.composition.baseline.source)
        if self.encoder.static == "vectors":
            out.append(self.encoder.model)
        return out


def _settings(part: Any) -> dict[str, Any]:
    out = {}
    for s in settings_of(type(part)):
        if not s.decl.option:
            continue
        value = getattr(part, s.name)
        if isinstance(value, Corpus):
            value = list(value.texts)
        out[s.name] = value
    return out


def _applies(spec: RunSpec, name: str) -> bool:
    if name == "layer":
        return hasattr(spec.composition.aggregator, "layer") and spec.encoder.static is None
    if name == "max_length":
        return spec.encoder.static is None
    return True


def _plain(value: Any) -> Any:
    """TOML-writable: tuples as lists (inf and -inf are TOML's own)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        raise ConfigError("a NaN setting cannot be written")
    return value


__all__ = ["RunSpec"]
