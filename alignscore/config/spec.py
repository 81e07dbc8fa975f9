"""One description of a run: encoder, composition, runtime and cache.

Every way in compiles to a :class:`RunSpec`, and one writer writes it back whole
(:meth:`RunSpec.toml`): a written file fixes every number.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ..cache import CacheSpec
from ..rescale import Baseline
from ..composition import Composition, CompositionOptions
from ..encoders.spec import EncoderSpec
from ..errors import ConfigError
from ..filters import FILTERS
from ..runtime import Runtime
from ..settings import settings_of
from ..textio import toml_text
from ..weighting.schemes import Corpus
from .schema import FILTER_LIST, STAGES, options


@dataclass(frozen=True)
class RunSpec:
    """Everything a run is; the default is BERTScore's. How each option was given is kept beside
    it (:class:`~alignscore.config.sources.Provenance`).

    Attributes
    ----------
    encoder : the model and how texts are encoded.
    composition : the parts after the encoder (each its own description).
    runtime : how it runs (never changes a number beyond float rounding).
    cache : the embedding cache (None: none).

    Examples
    --------
    >>> from alignscore import WMD
    >>> spec = RunSpec(composition=Composition(aligner=WMD()))
    >>> spec.encoder.model, spec.composition.metric, spec.to_mapping()["aligner"]
    ('roberta-large', 'score', 'wmd')
    >>> print(RunSpec().toml().splitlines()[0])
    # Not set here (decided when the run starts): max_length = the model's own limit; ...
    """

    encoder: EncoderSpec = field(default_factory=EncoderSpec)
    composition: Composition = field(default_factory=Composition)
    runtime: Runtime = field(default_factory=Runtime)
    cache: CacheSpec | None = None

    def __post_init__(self) -> None:
        for f, kind in zip(fields(self), (EncoderSpec, Composition, Runtime, (CacheSpec, type(None)))):
            if not isinstance(getattr(self, f.name), kind):
                raise ConfigError(f"{f.name} must be a {f.type}, not {type(getattr(self, f.name)).__name__}")
        self.composition.check_encoder(self.encoder.static, self.encoder.model)
        self.encoder.check_device(self.runtime.device)
        self.encoder.locate()  # last: every value and pairing is reported before the model's absence
        if self.composition.lm is not None:  # and the language model's, where its model's is checked
            self.composition.lm.locate()

    def to_mapping(self) -> dict[str, Any]:
        """The whole run as options (every setting that has a value; files as absolute paths)."""
        return {k: v for k, v in self._mapping().items() if v is not None}

    def _mapping(self) -> dict[str, Any]:
        c, given = self.composition, CompositionOptions.of(self.composition)
        own = _settings(given)
        special = next(iter(own))  # the token roles' option: written beside the filters
        out = _settings(self.encoder)
        for stage, part in c.parts().items():
            out[stage] = STAGES[stage].name_of(part)
            out.update(_settings(part))
            if special in own:
                out[special] = own.pop(special)
                out[FILTER_LIST] = [FILTERS.name_of(f) for f in c.roles.filters]
                for f in c.roles.filters:
                    out.update(_settings(f))
        if isinstance(given.baseline, Baseline):
            raise ConfigError("a run with a baseline made in Python (not read from a file) cannot be written: "
                              "write the baseline to a file and give baseline = FILE")
        return {**out, **own, **_settings(self.runtime), **(_settings(self.cache) if self.cache else {})}

    def toml(self, comment: str | None = None, changes: Mapping[str, Any] | None = None) -> str:
        """:meth:`to_mapping` as TOML, with ``changes`` to its values (an in-memory corpus
        written to a file); the comment lists the settings left to the model or the machine
        (those that apply to this run and are unset)."""
        data = {**self.to_mapping(), **(changes or {})}
        table, mapping = options(), self._mapping()
        unset = [f"{name} = {o.setting.decl.unset}" for name, o in table.items() if o.setting and o.setting.decl.unset
                 and name in mapping and mapping[name] is None and name not in data
                 and not (o.layered and self.encoder.static is not None)]
        notes = (comment + "\n" if comment else "") + ("Not set here (decided when the run starts): "
                                                        + "; ".join(unset) if unset else "")
        return toml_text(data, notes.strip() or None)

    def files(self) -> list[str]:
        """The input files the run reads besides its texts (stop words, idf corpus, baseline,
        a word-vector table): every setting declared as a file that names one; no output may
        overwrite them, and a resumed output must have been made from the same contents."""
        c = self.composition
        out = [v for part in (*c.roles.filters, *c.parts().values(), CompositionOptions.of(c))
               for s in settings_of(type(part)) if s.decl.file and isinstance(v := getattr(part, s.name), str)]
        return out + ([self.encoder.model] if self.encoder.static == "vectors" else [])


def _settings(part: Any) -> dict[str, Any]:
    """A part's (or the encoder's, the runtime's, the cache's) options and their values."""
    values = {s.name: getattr(part, s.name) for s in settings_of(type(part)) if s.decl.option}
    return {k: list(v.texts) if isinstance(v, Corpus) else v for k, v in values.items()}


__all__ = ["RunSpec"]
