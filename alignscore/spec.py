"""One description of a run: which encoder, which composition, how to run it and which cache.

Every way in compiles to a :class:`RunSpec` and nothing else: command-line options and keyword
arguments (:func:`alignscore.options.run_spec`), presets (a preset is a spec), composition files
(:meth:`RunSpec.from_table`, :meth:`RunSpec.read`), grid cells and tune candidates (their
composition tables), diff and compare's A and B (options layered on the shared ones). Then
:func:`build` makes the :class:`~alignscore.scorer.Scorer`; :func:`build_all` makes several,
sharing one loaded model wherever the encoder specs (and devices) are equal.

A composition file holds the composition's keys (:mod:`alignscore.composition`), the encoder's
(``model``, ``revision``, ``max_length``, ``long_texts``, ``window_stride``, ``dtype``,
``lowercase``) and, optionally, ``[runtime]`` and ``[cache]`` tables::

    model = "all-MiniLM-L6-v2"
    layer = 4
    weighting = { name = "idf-S", sep = true }
    aligner = { name = "wmd", n_gram = 2 }
    long_texts = "window"

    [runtime]
    batch_size = 32
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from .cache import DEFAULT_MAX_BYTES, EmbeddingCache, parse_size
from .composition import SPEC_KEYS, CompositionSpec, load_toml
from .encoders.base import Encoder
from .encoders.huggingface import HFEncoder
from .encoders.spec import EncoderSpec
from .encoders.static import StaticEncoder
from .errors import ConfigError, InputError
from .runtime import Runtime
from .scorer import Scorer
from .settings import setting

ENCODER_KEYS = tuple(f.name for f in fields(EncoderSpec))
RUNTIME_KEYS = ("batch_size", "token_budget", "pair_batch_size", "device")


def _cache_size(value: Any) -> int:
    return parse_size(value) if isinstance(value, str) else int(value)


@dataclass(frozen=True)
class CacheSpec:
    """A persistent cache of hidden states (:class:`~alignscore.cache.EmbeddingCache`)."""

    directory: str = setting("", flag="--cache", parse=lambda v: v, help=(
        "Directory of a persistent cache of hidden states: texts encoded before by the same model skip the "
        "encoder."))
    max_bytes: int = setting(DEFAULT_MAX_BYTES, flag="--cache-size", parse=_cache_size, help=(
        "Bound on the cache's size (e.g. 500M, 4G; default 4G); least recently used states go first."))
    timeout_s: float = setting(5.0, option=False)

    def __post_init__(self) -> None:
        if isinstance(self.directory, os.PathLike):
            object.__setattr__(self, "directory", os.fspath(self.directory))
        if not isinstance(self.directory, str) or not self.directory:
            raise ConfigError(f"a cache is a directory, not {self.directory!r}")
        EmbeddingCache(self.directory, self.max_bytes, self.timeout_s)  # checks the bound

    @classmethod
    def of(cls, value: Any) -> "CacheSpec":
        """A cache spec from a directory or an :class:`EmbeddingCache`."""
        if isinstance(value, CacheSpec):
            return value
        if isinstance(value, EmbeddingCache):
            return cls(str(value.directory), value.max_bytes, value.timeout_s)
        return cls(value)

    def build(self) -> EmbeddingCache:
        return EmbeddingCache(self.directory, self.max_bytes, self.timeout_s)


@dataclass(frozen=True)
class RunSpec:
    """Everything a run is: the :class:`EncoderSpec`, the :class:`CompositionSpec`, the
    :class:`~alignscore.runtime.Runtime` (never changes a number beyond float rounding) and the
    cache (None: none). The default spec is BERTScore's."""

    encoder: EncoderSpec = field(default_factory=EncoderSpec)
    composition: CompositionSpec = field(default_factory=CompositionSpec)
    runtime: Runtime = field(default_factory=Runtime)
    cache: CacheSpec | None = None

    def __post_init__(self) -> None:
        for name, kind in (("encoder", EncoderSpec), ("composition", CompositionSpec), ("runtime", Runtime)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{name} must be a {kind.__name__}, not {type(getattr(self, name)).__name__}")
        if self.cache is not None and not isinstance(self.cache, CacheSpec):
            object.__setattr__(self, "cache", CacheSpec.of(self.cache))
        self.encoder.check_device(self.runtime.device)

    # -- files -------------------------------------------------------------------------------------
    @classmethod
    def from_table(cls, table: Mapping[str, Any], base_dir: str | Path = ".", where: str = "composition",
                   base: "RunSpec | None" = None) -> "RunSpec":
        """A composition file's table layered on ``base`` (default: BERTScore): each key it
        names replaces the base's (parts as :func:`~alignscore.composition.merge_part` says)."""
        base = base or cls()
        known = set(SPEC_KEYS) | set(ENCODER_KEYS) | {"runtime", "cache"}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; a composition file has: "
                              f"{', '.join(sorted(known))}")
        encoder = _replaced(base.encoder, {k: table[k] for k in ENCODER_KEYS if k in table}, where)
        composition = CompositionSpec.from_table({k: v for k, v in table.items() if k in SPEC_KEYS},
                                                 base_dir, where, base.composition)
        runtime = _replaced(base.runtime, _table(table, "runtime", RUNTIME_KEYS, where), f"{where}.runtime")
        cache = base.cache
        if "cache" in table:
            given = _table(table, "cache", ("directory", "max_bytes"), where)
            if "max_bytes" in given:
                given["max_bytes"] = _cache_size(given["max_bytes"])
            cache = _replaced(cache or CacheSpec(given.get("directory", "")), given, f"{where}.cache")
        return cls(encoder, composition, runtime, cache)

    def to_table(self) -> dict[str, Any]:
        """The composition file of this spec (settings equal to the defaults left out, except
        the model and the composition's keys)."""
        out: dict[str, Any] = {"model": self.encoder.model}
        out.update({f.name: getattr(self.encoder, f.name) for f in fields(EncoderSpec)
                    if f.name != "model" and getattr(self.encoder, f.name) != f.default})
        out.update(self.composition.to_table())
        runtime = {k: getattr(self.runtime, k) for k in RUNTIME_KEYS
                   if getattr(self.runtime, k) != getattr(Runtime(), k)}
        if runtime:
            out["runtime"] = runtime
        if self.cache is not None:
            out["cache"] = {"directory": self.cache.directory, "max_bytes": self.cache.max_bytes}
        return out

    @classmethod
    def read(cls, path: str | Path, base: "RunSpec | None" = None) -> "RunSpec":
        """A composition file (TOML) layered on ``base``; relative file names inside it are read
        from its folder."""
        path = Path(path)
        return cls.from_table(load_toml(path), path.resolve().parent, str(path), base)

    def toml(self, comment: str | None = None) -> str:
        """:meth:`to_table` as TOML text (``comment`` lines first)."""
        import tomli_w

        head = "".join(f"# {line}\n" for line in (comment or "").splitlines())
        return head + tomli_w.dumps(_plain(self.to_table()))

    def files(self) -> list[str]:
        """The input files the spec names (stop words, idf corpus, baseline)."""
        return self.composition.files()


def _table(table: Mapping[str, Any], key: str, keys: Sequence[str], where: str) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}.{key}: expected a table ([{key}])")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise ConfigError(f"{where}.{key}: unknown key(s) {', '.join(unknown)} (it has: {', '.join(keys)})")
    return dict(value)


def _replaced(obj: Any, changes: Mapping[str, Any], where: str) -> Any:
    """``replace(obj, **changes)`` with a TypeError (a value of the wrong type) as a ConfigError."""
    if not changes:
        return obj
    try:
        return replace(obj, **changes)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _plain(value: Any) -> Any:
    """TOML-writable: tuples as lists, None left out."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def build(spec: RunSpec, encoder: Encoder | None = None) -> Scorer:
    """The :class:`Scorer` of ``spec``: its encoder (``encoder``, when given, stands in for the
    one the spec names), its composition built (files read), its runtime and cache."""
    if encoder is None:
        encoder = _encoder(spec)
    return Scorer(encoder, spec.composition.build(), spec.runtime,
                  spec.cache.build() if spec.cache is not None else None)


def build_all(specs: Sequence[RunSpec]) -> list[Scorer]:
    """:func:`build` of each spec; specs with equal encoder specs and devices share one encoder
    object (one model loaded, each text encoded once by :func:`~alignscore.scorer.score_together`)."""
    encoders: dict[tuple[EncoderSpec, str | None], Encoder] = {}
    out = []
    for spec in specs:
        key = (spec.encoder, spec.runtime.device)
        if key not in encoders:
            encoders[key] = _encoder(spec)
        out.append(build(spec, encoders[key]))
    return out


def _encoder(spec: RunSpec) -> Encoder:
    return encoder_of(spec.encoder, spec.runtime.device)


def encoder_of(e: EncoderSpec, device: str | None = None) -> Encoder:
    """The encoder an :class:`EncoderSpec` names (nothing loaded yet): a
    :class:`~alignscore.encoders.static.StaticEncoder` where the model is a static table (a
    word2vec text file, a model2vec directory), else an :class:`HFEncoder`."""
    if e.static is not None:
        return StaticEncoder(e.model, lowercase=e.lowercase, device_name=device)
    if Path(e.model).suffix in (".vec", ".txt"):  # meant as a vectors file: never a hub id to download
        raise InputError("no such vectors file (a word2vec text file for a static encoder)", e.model)
    return HFEncoder(e.model, device_name=device, max_length=e.max_length, revision=e.revision,
                     dtype=e.dtype, long_texts=e.long_texts, stride=e.window_stride)


__all__ = ["CacheSpec", "ENCODER_KEYS", "RUNTIME_KEYS", "RunSpec", "build", "build_all", "encoder_of"]
