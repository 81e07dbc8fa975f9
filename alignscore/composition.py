"""A composition: the parts of a metric after the encoder, validated, and built from names.

A :class:`Composition` holds the aggregator, the token roles (special-token policy and filters),
the weighting, the aligner, which of the aligner's outputs is *the* score (``metric``), how
several references reduce and the baseline rescaling. The encoder is apart: one encoding serves
every composition over the same model (:mod:`alignscore.engine`).

Compositions are written with one vocabulary everywhere: CLI options, grid rows and columns
(``docs/ablation.md``), presets and composition files (TOML) are all *specs*, mappings of
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

import inspect
import sys
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

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
from .signature import Signature
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

    @classmethod
    def of(cls, name: str, args: Mapping[str, Any]) -> "PartSpec":
        """The part ``name`` with ``args`` (kept sorted, lists as tuples)."""
        return cls(name, tuple(sorted((str(k), _freeze(v)) for k, v in args.items())))

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


def to_part_spec(value: Any, where: str, registry: Registry[Any]) -> PartSpec:
    """:func:`part_spec`, also of a part object of a class registered in ``registry`` (its
    settings that differ from the defaults)."""
    if isinstance(value, (str, Mapping, PartSpec)):
        return part_spec(value, where, registry)
    try:  # every setting, defaults too: a part given whole says what each of its settings is
        written = _part_value(registry, value, every=True)
    except ConfigError:
        raise ConfigError(f"{where}: expected a name, a table with `name`, or a registered {registry.stage}, "
                          f"not {describe(value)}") from None
    return part_spec(written, where, registry)


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
        if not encoder.has_layers and not (isinstance(self.aggregator, SingleLayer) and self.aggregator.layer is None):
            given = (f"layer {self.aggregator.layer}" if isinstance(self.aggregator, SingleLayer)
                     else f"aggregator {type(self.aggregator).__name__}")
            raise ConfigError(f"{encoder.name!r} is a static table (one vector per token, no layers): layer and "
                              f"aggregator options do not apply to it (given: {given}); leave them out")
        if not encoder.has_layers and getattr(self.aligner, "layers", 1) != 1:  # baryscore's stack of layers
            raise ConfigError(f"{encoder.name!r} is a static table (one layer): aligner {self.aligner.signature()} "
                              f"reads {self.aligner.layers} layers; give it one (--bary-layers 1)")
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

    def signature(self, encoder: Encoder) -> Signature:
        """Everything that changes a number, sacreBLEU-style (resolved), e.g.
        ``model:roberta-large|layers:L17|tokens:special=match-only|w:none|align:greedy(cos)|...``."""
        from ._version import __version__, installed_version
        import torch

        fields = {
            "model": encoder.signature(),
            "layers": self.aggregator.signature() + (f"(default of {self.default_of})" if self.default_of else ""),
            "tokens": self.roles.signature(),
            "w": self.weighting.signature(),
            "align": self.aligner.signature(),
        }
        if self.metric != self.aligner.primary:
            fields["metric"] = self.metric
        fields.update({
            "refs": self.multi_ref,
            "rescale": self.baseline.name if self.baseline else "no",
            "v": f"alignscore-{__version__},torch-{torch.__version__},transformers-{installed_version('transformers')}",
        })
        return Signature.of(fields)


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
    """The :class:`Composition` a spec table describes (the ``model`` key is not a part: read it
    from the table). Files (stop words, idf corpus, baseline) are read relative to ``base_dir``.

    Raises ConfigError for parts that do not fit, InputError for files that cannot be read.
    """
    return CompositionSpec.from_table(spec, base_dir, where).build(where)


@dataclass(frozen=True)
class CompositionSpec:
    """A composition by name: what every way in compiles to before any part is built (a
    composition file, a grid cell, a tune candidate, a preset, command-line options, keyword
    arguments). Parts are :class:`PartSpec` (a registry name and its settings); files are
    absolute paths. :meth:`build` makes the :class:`Composition`; :meth:`to_table` is the
    file's vocabulary (the module's docstring), which :meth:`from_table` reads back to the same spec.
    """

    aggregator: PartSpec = PartSpec("single")
    special_tokens: str = "match-only"
    filters: tuple[PartSpec, ...] = ()
    weighting: PartSpec = PartSpec("none")
    aligner: PartSpec = PartSpec("greedy")
    metric: str | None = None
    multi_ref: str = "max"
    baseline: str | Baseline | None = None

    def __post_init__(self) -> None:
        for name, registry in (("aggregator", AGGREGATORS), ("weighting", WEIGHTINGS), ("aligner", ALIGNERS)):
            object.__setattr__(self, name, part_spec(getattr(self, name), name, registry))
        object.__setattr__(self, "filters", tuple(part_spec(f, "filters", FILTERS) for f in self.filters))
        check_special_policy(self.special_tokens)
        if self.multi_ref not in MULTI_REF:
            raise ConfigError(f"multi_ref: one of {', '.join(MULTI_REF)}, not {self.multi_ref!r}")
        if self.metric is not None and not isinstance(self.metric, str):
            raise ConfigError(f"metric: expected an output name, not {self.metric!r}")
        if self.baseline is not None and not isinstance(self.baseline, (str, Baseline)):
            raise ConfigError(f"baseline: expected a file (or a Baseline), not {describe(self.baseline)}")

    @classmethod
    def from_table(cls, table: Mapping[str, Any], base_dir: str | Path = ".", where: str = "composition",
                   base: "CompositionSpec | None" = None, add_filters: bool = False) -> "CompositionSpec":
        """``table`` (a composition file's keys; ``model`` is ignored) layered on ``base``
        (default: BERTScore's composition): each key it names replaces the base's, a part
        through :func:`merge_part`; ``filters`` replace the base's, or are added to them with
        ``add_filters``. Relative file names are read from ``base_dir``."""
        t = check_spec(table, where)
        base = base or cls()
        root = Path(base_dir)
        agg = t.get("aggregator")
        agg_settings = dict(agg.args) if agg is not None else {}
        if t.get("layer") is not None:
            agg_settings["layer"] = t["layer"]
        aggregator = merge_part(AGGREGATORS, base.aggregator, agg.name if agg else None, agg_settings, where)
        w = t.get("weighting")
        w_settings = dict(w.args) if w is not None else {}
        if "idf_corpus" in t:
            w_settings["corpus"] = t["idf_corpus"]
        if "corpus" in w_settings:
            w_settings["corpus"] = _file_or_texts(w_settings["corpus"], root)
        if "sep" in t and (t["sep"] or "sep" in part_settings(WEIGHTINGS, w.name if w else base.weighting.name)):
            w_settings["sep"] = t["sep"]  # sep = false beside a weighting without SEP says nothing
        weighting = merge_part(WEIGHTINGS, base.weighting, w.name if w else None, w_settings, where)
        aligner = t.get("aligner")
        aligner = merge_part(ALIGNERS, base.aligner, aligner.name if aligner else None,
                             dict(aligner.args) if aligner else {}, where)
        filters = tuple(_resolved_filter(f, root) for f in t.get("filters", ()))
        if add_filters or "filters" not in t:
            filters = base.filters + tuple(f for f in filters if f not in base.filters)
        baseline = t.get("baseline", base.baseline)
        return cls(aggregator, t.get("special_tokens", base.special_tokens), filters, weighting, aligner,
                   t.get("metric", base.metric), t.get("multi_ref", base.multi_ref),
                   str((root / baseline).resolve()) if baseline is not None and "baseline" in t else baseline)

    def to_table(self) -> dict[str, Any]:
        """The composition file's keys (``layer = N`` for a single layer; settings that equal a
        part's default are left out; files as absolute paths)."""
        out: dict[str, Any] = {}
        if self.aggregator.name == "single" and set(dict(self.aggregator.args)) <= {"layer"}:
            if dict(self.aggregator.args).get("layer") is not None:
                out["layer"] = dict(self.aggregator.args)["layer"]
        else:
            out["aggregator"] = self.aggregator.to_value()
        out["special_tokens"] = self.special_tokens
        if self.filters:
            out["filters"] = [f.to_value() for f in self.filters]
        out["weighting"] = self.weighting.to_value()
        out["aligner"] = self.aligner.to_value()
        if self.metric is not None:
            out["metric"] = self.metric
        out["multi_ref"] = self.multi_ref
        if isinstance(self.baseline, Baseline):
            raise ConfigError("a composition with a baseline is written with the baseline's file: give `baseline = FILE`")
        if self.baseline is not None:
            out["baseline"] = self.baseline
        return out

    def build(self, where: str = "composition") -> Composition:
        """The parts, constructed (files read). Raises ConfigError for parts that do not fit,
        InputError for files that cannot be read."""
        weighting = dict(self.weighting.args)
        corpus = weighting.get("corpus")
        if isinstance(corpus, str):
            path = Path(corpus)
            weighting.update(corpus=read_lines(path), corpus_name=weighting.get("corpus_name") or path.name)
        return Composition(
            aggregator=_construct(AGGREGATORS, self.aggregator, where),
            roles=TokenRoles(self.special_tokens, tuple(build_filter(f, ".", where) for f in self.filters)),
            weighting=_construct(WEIGHTINGS, PartSpec.of(self.weighting.name, weighting), where),
            aligner=_construct(ALIGNERS, self.aligner, where),
            metric=self.metric,
            multi_ref=self.multi_ref,
            baseline=Baseline.read(self.baseline) if isinstance(self.baseline, str) else self.baseline,
        )

    def files(self) -> list[str]:
        """The files this composition reads (stop words, idf corpus, baseline): inputs that no
        output may overwrite, and whose contents a resumed output must still match."""
        out = [str(dict(f.args)["file"]) for f in self.filters if isinstance(dict(f.args).get("file"), str)]
        corpus = dict(self.weighting.args).get("corpus")
        return out + ([corpus] if isinstance(corpus, str) else []) + (
            [self.baseline] if isinstance(self.baseline, str) else [])


def part_settings(registry: Registry[Any], name: str) -> tuple[str, ...]:
    """The settings a registered part takes: its constructor's arguments (private ones aside)."""
    params = inspect.signature(registry.get(name)).parameters
    return tuple(k for k, p in params.items() if not k.startswith("_") and p.kind is not p.VAR_KEYWORD)


def merge_part(registry: Registry[Any], current: PartSpec, name: str | None, settings: Mapping[str, Any],
               where: str, label: Callable[[str], str] = str, stage: str | None = None) -> PartSpec:
    """``current`` with another part ``name`` and/or ``settings`` layered on it, as every way in
    overrides a composition (a preset, a file, options):

    - naming another part replaces ``current``; of its settings, those the new part takes too are
      kept (wmd -> sinkhorn keeps the cost and the n-gram size); the others served the part they
      came with and go with it (idf-S with SEP -> none: uniform masses);
    - settings given without a part name apply to ``current``; a setting it does not take selects
      the one registered part that takes all of them, else it is an error naming the parts that do;
    - a setting the part named alongside does not take is an error naming both (``label`` says
      how a setting was given, ``stage`` how the part is: ``--aligner``, ``aligner=``).
    """
    stage = stage or registry.stage
    settings = {k: v for k, v in settings.items()  # a switch given off to a part without it says nothing
                if v is not False or k in part_settings(registry, name or current.name)}
    if name is not None:
        part_spec(name, where, registry)
        takes = part_settings(registry, name)
        wrong = [k for k in settings if k not in takes]
        if wrong:
            raise _not_taken(registry, wrong[0], name, where, label, stage)
        kept = dict(current.args) if name == current.name else {k: v for k, v in current.args if k in takes}
        return PartSpec.of(name, {**kept, **settings})
    if not settings:
        return current
    if all(k in part_settings(registry, current.name) for k in settings):
        return PartSpec.of(current.name, {**dict(current.args), **settings})
    takers = [n for n in registry.names() if all(k in part_settings(registry, n) for k in settings)]
    if len(takers) == 1:
        return merge_part(registry, current, takers[0], settings, where, label, stage)
    missing = next(k for k in settings if k not in part_settings(registry, current.name))
    raise _not_taken(registry, missing, current.name, where, label, stage)


def _not_taken(registry: Registry[Any], setting: str, part: str, where: str, label: Callable[[str], str],
               stage: str) -> ConfigError:
    takers = [n for n in registry.names() if setting in part_settings(registry, n)]
    return ConfigError(f"{_at(where)}{label(setting)} applies to {stage} {' or '.join(takers) or '(none)'}, "
                       f"not {part}" + ("; name one" if len(takers) > 1 else ""))


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def _file_or_texts(value: Any, root: Path) -> Any:
    """An idf corpus as a spec holds it: a file name resolved against ``root``, or the sentences."""
    if isinstance(value, str):
        return str((root / value).resolve())
    return tuple(value) if isinstance(value, list) else value


def _resolved_filter(part: PartSpec, root: Path) -> PartSpec:
    """A filter whose ``file`` is resolved against ``root``."""
    args = dict(part.args)
    if isinstance(args.get("file"), str):
        args["file"] = str((root / args["file"]).resolve())
        return PartSpec.of(part.name, args)
    return part


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
    elif part.name == "stopwords" and "words" not in kwargs:
        raise ConfigError(f"{where}.filters: the stopwords filter needs a word list (file = \"stop.txt\", "
                          "--stopwords FILE)")
    return _construct(FILTERS, PartSpec.of(part.name, kwargs), f"{where}.filters")


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
    out["weighting"] = _part_value(WEIGHTINGS, composition.weighting)
    out["aligner"] = _part_value(ALIGNERS, composition.aligner)
    out["metric"] = composition.metric
    out["multi_ref"] = composition.multi_ref
    if composition.baseline is not None:
        raise ConfigError("a composition with a baseline is written with the baseline's file: give `baseline = FILE`")
    return out


def _part_value(registry: Registry[Any], part: Any, every: bool = False) -> str | dict[str, Any]:
    """A part as a spec value: its registry name and the settings that differ from the defaults
    (``every``: all of them; idf weightings, registered as two factories of one class, by which
    one made them; an idf-L corpus inline)."""
    if isinstance(part, Idf):
        args: dict[str, Any] = {"sep": part.sep} if part.sep or every else {}
        if part.corpus is not None:
            args.update(corpus=list(part.corpus.texts), **({"corpus_name": part.corpus_name} if part.corpus_name else {}))
        return PartSpec.of("idf-S" if part.corpus is None else "idf-L", args).to_value()
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
        if value != default or every:
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
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                         str(path)) from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


__all__ = ["MULTI_REF", "SPEC_KEYS", "Composition", "CompositionSpec", "PartSpec", "build", "build_filter", "check_spec",
           "load_toml", "merge_part", "part_settings", "part_spec", "read_spec", "to_part_spec", "to_spec", "write_spec"]
