"""A composition: the parts of a metric after the encoder, validated, and built from names.

A :class:`Composition` holds the aggregator, the token roles (special-token policy and filters),
the weighting, the aligner, which of the aligner's outputs is *the* score (``metric``), how
several references reduce and the baseline rescaling. The encoder is apart: one encoding serves
every composition over the same model (:mod:`alignscore.engine`).

Compositions are written with one vocabulary everywhere: CLI options, grid rows and columns
(``ablations/README.md``), presets and composition files (TOML) are all *specs*, mappings of
these keys, and :func:`build` is the one place that turns a spec into parts::

    model = "all-MiniLM-L6-v2"                 # hub id or directory (optional in a file)
    aggregator = "single"                      # or { name = "pmeans", layers_spec = [-5, -4, -3, -2, -1] }
    layer = 4                                  # the single-layer aggregator's layer
    special_tokens = "match-only"              # "drop", "keep"
    filters = ["rm", { name = "stopwords", file = "stop.txt" }]
    weighting = "idf-L"                        # "none", "idf-S", or { name = "idf-L", corpus = "refs.txt" }
    sep = true                                 # candidates get an idf of their own
    idf_corpus = "refs.txt"                    # the idf-L corpus (a file, relative to the spec's folder)
    aligner = { name = "wmd", n_gram = 2 }     # "greedy", "wmd", "sinkhorn" (ALIGNERS) and arguments
    metric = "score"                           # which output is the score (default: the aligner's primary)
    multi_ref = "max"                          # "mean"
    baseline = "minilm.tsv"                    # rescale with a bert_score-format baseline file

Every part is named by its registry name (``AGGREGATORS``, ``FILTERS``, ``WEIGHTINGS``,
``ALIGNERS``), so a part registered from outside the package is usable from every way in.
"""

from __future__ import annotations

import sys
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .aggregators import AGGREGATORS
from .aggregators.base import Aggregator, check_layer
from .aggregators.single import SingleLayer
from .aligners import ALIGNERS
from .aligners.base import Aligner
from .aligners.greedy import Greedy
from .baseline import Baseline
from .errors import ConfigError, InputError, describe
from .filters import FILTERS
from .filters.base import TokenFilter, TokenRoles, check_special_policy
from .registry import Registry
from .textio import read_lines
from .weighting import WEIGHTINGS
from .weighting.base import Weighting
from .weighting.schemes import Corpus, Idf, Uniform

if TYPE_CHECKING:
    from .encoders.base import Encoder

MULTI_REF = ("max", "mean")
SPEC_KEYS = ("model", "aggregator", "layer", "special_tokens", "filters", "weighting", "sep", "idf_corpus",
             "aligner", "metric", "multi_ref", "baseline")


@dataclass(frozen=True)
class PartSpec:
    """A registry name and its keyword arguments (``"rm"`` or ``{ name = "pmeans", ... }``)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()

    @property
    def kwargs(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.args}

    def to_value(self) -> str | dict[str, Any]:
        """As written in a spec: the bare name, or a table with ``name``."""
        return self.name if not self.args else {"name": self.name, **self.kwargs}

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return self.name + "(" + ",".join(f"{k}={v}" for k, v in self.args) + ")"


def part_spec(value: Any, where: str, registry: Registry[Any]) -> PartSpec:
    """A :class:`PartSpec` from a spec value (a name or a table with ``name``); the name is
    checked against ``registry`` (unknown names fail with the list of known ones)."""
    if isinstance(value, PartSpec):
        name, args = value.name, dict(value.args)
    elif isinstance(value, str):
        name, args = value, {}
    elif isinstance(value, Mapping) and isinstance(value.get("name"), str):
        args = {k: v for k, v in value.items() if k != "name"}
        name = value["name"]
    else:
        raise ConfigError(f"{where}: expected a name or a table with `name`, not {value!r}")
    try:
        registry.get(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return PartSpec(name, tuple(sorted((str(k), _freeze(v)) for k, v in args.items())))


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True)
class Composition:
    """A metric, given an encoder: which layers and how they become token vectors
    (``aggregator``), which tokens take part (``roles``), their masses (``weighting``), how the
    two texts are aligned (``aligner``), which of its outputs is the score (``metric``, default the
    aligner's primary: F1 for greedy, the score for optimal transport), how a candidate's several
    references reduce (``multi_ref``: ``"max"`` per metric as bert_score, or ``"mean"``) and the
    optional ``baseline`` rescaling ``x' = (x - b) / (1 - b)`` (single-layer aggregators only).
    ``default_of`` names the known model whose default layer a local copy of it was given (set
    by :meth:`resolve`; the signature says so).

    Built once per model with :meth:`resolve` (layers counted from the top and the model's
    default layer become layer numbers); the engine takes resolved compositions.
    """

    aggregator: Aggregator = field(default_factory=SingleLayer)
    roles: TokenRoles = field(default_factory=TokenRoles)
    weighting: Weighting = field(default_factory=Uniform)
    aligner: Aligner = field(default_factory=Greedy)
    metric: str | None = None
    multi_ref: str = "max"
    baseline: Baseline | None = None
    default_of: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name, kind in (("aggregator", Aggregator), ("roles", TokenRoles), ("weighting", Weighting),
                           ("aligner", Aligner)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{name} must be an instance of {kind.__name__}, not {describe(getattr(self, name))}")
        if self.multi_ref not in MULTI_REF:
            raise ConfigError(f"multi_ref must be one of {MULTI_REF}, not {self.multi_ref!r}")
        if self.baseline is not None and not isinstance(self.baseline, Baseline):
            raise ConfigError(f"baseline must be a Baseline (Baseline.read(path)), not {describe(self.baseline)}")
        metrics = self.aligner.metrics
        if self.metric is None:
            object.__setattr__(self, "metric", self.aligner.primary)
        elif self.metric not in metrics:
            raise ConfigError(f"aligner {self.aligner.signature()} has no output {self.metric!r} "
                              f"(it gives {', '.join(metrics)})")

    @property
    def metrics(self) -> tuple[str, ...]:
        """The outputs, per pair and per candidate."""
        return tuple(self.aligner.metrics)

    def resolve(self, encoder: Encoder) -> "Composition":
        """This composition for ``encoder``'s model: absolute layers (the model's default layer
        where none was given) and a baseline checked against them. Raises ConfigError."""
        try:
            aggregator = self.aggregator.resolve(encoder.num_layers, encoder.default_layer())
        except ConfigError as exc:
            raise ConfigError(f"model {encoder.name!r}: {exc}") from None
        default_of = None
        if isinstance(self.aggregator, SingleLayer) and self.aggregator.layer is None:
            default_of = encoder.default_layer_origin()
        out = replace(self, aggregator=aggregator, default_of=default_of)
        out.baseline_values()
        return out

    def baseline_values(self) -> dict[str, float] | None:
        """The baseline row of the (resolved) single layer, or ``None`` without a baseline."""
        if self.baseline is None:
            return None
        if not isinstance(self.aggregator, SingleLayer):
            raise ConfigError("baseline rescaling reads one row per layer: it needs a single-layer aggregator")
        values = self.baseline.values(self.aggregator.layers[0])
        missing = [m for m in self.metrics if m not in values]
        if missing:  # rescaling only some outputs would report rescaled and raw scores side by side
            raise ConfigError(f"the baseline has no value for the output(s) {', '.join(missing)} "
                              f"of {self.aligner.signature()}")
        return values

    def signature(self, encoder: Encoder) -> str:
        """Everything that changes a number, sacreBLEU-style (resolved), e.g.
        ``model:roberta-large|layers:L17|tokens:special=match-only|w:none|align:greedy(cos)|...``."""
        from ._version import __version__, installed_version
        import torch

        parts = [
            f"model:{encoder.signature()}",
            f"layers:{self.aggregator.signature()}" + (f"(default of {self.default_of})" if self.default_of else ""),
            f"tokens:{self.roles.signature()}",
            f"w:{self.weighting.signature()}",
            f"align:{self.aligner.signature()}",
        ]
        if self.metric != self.aligner.primary:
            parts.append(f"metric:{self.metric}")
        parts += [
            f"refs:{self.multi_ref}",
            f"rescale:{self.baseline.name if self.baseline else 'no'}",
            f"v:alignscore-{__version__},torch-{torch.__version__},transformers-{installed_version('transformers')}",
        ]
        return "|".join(parts)


# -- specs: names -> parts ------------------------------------------------------------------------
def check_spec(spec: Mapping[str, Any], where: str = "composition") -> dict[str, Any]:
    """A spec with every key known and every part name registered (nothing is built or read)."""
    unknown = set(spec) - set(SPEC_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; a composition has: "
                          f"{', '.join(SPEC_KEYS)}")
    out = dict(spec)
    if "aggregator" in out:
        out["aggregator"] = part_spec(out["aggregator"], f"{where}.aggregator", AGGREGATORS)
    if "aligner" in out:
        out["aligner"] = part_spec(out["aligner"], f"{where}.aligner", ALIGNERS)
    if "weighting" in out:
        out["weighting"] = part_spec(out["weighting"], f"{where}.weighting", WEIGHTINGS)
    if "filters" in out:
        if isinstance(out["filters"], (str, Mapping)):
            out["filters"] = [out["filters"]]
        if not isinstance(out["filters"], (list, tuple)):
            raise ConfigError(f"{where}.filters: expected a list")
        out["filters"] = tuple(part_spec(f, f"{where}.filters", FILTERS) for f in out["filters"])
    for key, kinds, what in (("model", str, "a model name"), ("metric", str, "an output name"),
                             ("idf_corpus", (str, list, tuple, Corpus), "a file"), ("baseline", str, "a file"),
                             ("sep", bool, "true or false")):
        if key in out and out[key] is not None and not isinstance(out[key], kinds):
            raise ConfigError(f"{where}.{key}: expected {what}, not {out[key]!r}")
    if out.get("layer") is not None:
        out["layer"] = check_layer(out["layer"], f"{where}.layer")
    if "special_tokens" in out:
        check_special_policy(out["special_tokens"])
    if "multi_ref" in out and out["multi_ref"] not in MULTI_REF:
        raise ConfigError(f"{where}.multi_ref: one of {', '.join(MULTI_REF)}, not {out['multi_ref']!r}")
    return out


def build(spec: Mapping[str, Any], base_dir: str | Path = ".", where: str = "composition") -> Composition:
    """The :class:`Composition` a spec describes (the ``model`` key is not a part: read it from
    the spec). Files (stop words, idf corpus, baseline) are read relative to ``base_dir``.

    Raises ConfigError for parts that do not fit, InputError for files that cannot be read.
    """
    spec = check_spec(spec, where)
    base = Path(base_dir)
    aggregator = spec.get("aggregator", PartSpec("single"))
    if spec.get("layer") is not None:
        if aggregator.name != "single":
            raise ConfigError(f"{where}: `layer` selects the single-layer aggregator, but the aggregator is "
                              f"{aggregator.name!r} (give it `layers_spec`)")
        aggregator = PartSpec("single", tuple(sorted({**dict(aggregator.args), "layer": spec["layer"]}.items())))
    filters = tuple(build_filter(f, base, where) for f in spec.get("filters", ()))
    aligner = _construct(ALIGNERS, spec.get("aligner", PartSpec("greedy")), where)
    return Composition(
        aggregator=_construct(AGGREGATORS, aggregator, where),
        roles=TokenRoles(spec.get("special_tokens", "match-only"), filters),
        weighting=_build_weighting(spec, base, where),
        aligner=aligner,
        metric=spec.get("metric"),
        multi_ref=spec.get("multi_ref", "max"),
        baseline=Baseline.read(base / spec["baseline"]) if spec.get("baseline") else None,
    )


def _construct(registry: Registry[Any], part: PartSpec, where: str, **extra: Any) -> Any:
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in part.kwargs.items()}
    try:
        return registry.build(part.name, **kwargs, **extra)
    except TypeError as exc:
        raise ConfigError(f"{where}: {registry.stage} {part}: {_first_line(exc)}") from None


def build_filter(part: PartSpec, base_dir: str | Path = ".", where: str = "composition") -> TokenFilter:
    """A token filter; a ``file`` argument is read as a word list (``words``, named by the file)."""
    kwargs = part.kwargs
    if "file" in kwargs:
        path = Path(base_dir) / str(kwargs.pop("file"))
        kwargs.update(words=read_lines(path), label=kwargs.get("label") or path.name)
    return _construct(FILTERS, PartSpec(part.name, tuple(sorted((k, _freeze(v)) for k, v in kwargs.items()))),
                      f"{where}.filters")


def _build_weighting(spec: Mapping[str, Any], base: Path, where: str) -> Weighting:
    part = spec.get("weighting", PartSpec("none"))
    kwargs = part.kwargs
    if "sep" in spec:
        kwargs["sep"] = spec["sep"]
    corpus = spec.get("idf_corpus", kwargs.pop("corpus", None))
    if corpus is not None:
        if part.name != "idf-L":
            raise ConfigError(f"{where}: an idf corpus is only used with the idf-L weighting")
        if isinstance(corpus, str):
            path = base / corpus
            kwargs.update(corpus=read_lines(path), corpus_name=kwargs.get("corpus_name") or path.name)
        else:  # the sentences themselves (or a Corpus shared between compositions)
            kwargs["corpus"] = corpus
    elif part.name == "idf-L":
        raise ConfigError(f"{where}: the idf-L weighting needs a corpus (idf_corpus = FILE, --idf-corpus FILE)")
    return _construct(WEIGHTINGS, PartSpec(part.name, tuple(sorted((k, _freeze(v)) for k, v in kwargs.items()))),
                      f"{where}.weighting")


# -- compositions -> specs and files ------------------------------------------------------------------
def to_spec(composition: Composition, model: str | None = None) -> dict[str, Any]:
    """The spec of a composition (``build(to_spec(c))`` has ``c``'s signature). Settings equal to
    a part's default are left out; an idf-L corpus and stop words are written inline."""
    out: dict[str, Any] = {}
    if model is not None:
        out["model"] = model
    agg = composition.aggregator
    if isinstance(agg, SingleLayer) and agg.layer is not None:
        out["layer"] = agg.layer
    else:
        out["aggregator"] = _part_value(AGGREGATORS, agg)
    out["special_tokens"] = composition.roles.special
    if composition.roles.filters:
        out["filters"] = [_part_value(FILTERS, f) for f in composition.roles.filters]
    w = composition.weighting
    if isinstance(w, Idf):
        out["weighting"] = "idf-S" if w.corpus is None else "idf-L"
        if w.sep:
            out["sep"] = True
        if w.corpus is not None:
            out["weighting"] = {"name": "idf-L", "corpus": list(w.corpus.texts),
                                **({"corpus_name": w.corpus_name} if w.corpus_name else {})}
    else:
        out["weighting"] = _part_value(WEIGHTINGS, w)
    out["aligner"] = _part_value(ALIGNERS, composition.aligner)
    out["metric"] = composition.metric
    out["multi_ref"] = composition.multi_ref
    if composition.baseline is not None:
        raise ConfigError("a composition with a baseline is written with the baseline's file: give `baseline = FILE`")
    return out


def _part_value(registry: Registry[Any], part: Any) -> str | dict[str, Any]:
    """A part as a spec value: its registry name and the settings that differ from the defaults."""
    name = registry.name_of(part)
    if not is_dataclass(part):
        return name
    args = {}
    for f in fields(part):
        if not f.init or f.name.startswith("_"):
            continue
        value = getattr(part, f.name)
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else MISSING)
        if value != default:
            args[f.name] = sorted(value) if isinstance(value, frozenset) else _thaw(value)
    return PartSpec(name, tuple(sorted((k, _freeze(v)) for k, v in args.items()))).to_value()


def _thaw(value: Any) -> Any:
    return [_thaw(v) for v in value] if isinstance(value, tuple) else value


def read_spec(path: str | Path) -> dict[str, Any]:
    """A composition file (TOML) as a checked spec."""
    path = Path(path)
    return check_spec(load_toml(path), str(path))


def write_spec(spec: Mapping[str, Any], path: str | Path, comment: str | None = None) -> None:
    """Write a spec as a composition file (TOML), keys in the vocabulary's order."""
    import tomli_w

    data = {k: (v.to_value() if isinstance(v, PartSpec) else
                [f.to_value() if isinstance(f, PartSpec) else f for f in v] if k == "filters" else v)
            for k, v in sorted(spec.items(), key=lambda kv: SPEC_KEYS.index(kv[0])) if v is not None}
    text = tomli_w.dumps(data)
    head = "".join(f"# {line}\n" for line in (comment or "").splitlines())
    Path(path).write_text(head + text, encoding="utf-8")


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables, with errors that name the file."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", str(path)) from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


__all__ = ["MULTI_REF", "SPEC_KEYS", "Composition", "PartSpec", "build", "build_filter", "check_spec", "load_toml", "part_spec",
           "read_spec", "to_spec", "write_spec"]
