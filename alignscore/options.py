"""The options of a run: one table for every way in, compiled to one :class:`~alignscore.spec.RunSpec`.

The command line's flags are made from this table (:mod:`alignscore.cli.options`), and the
one-call API (``alignscore.score(cands, refs, **options)``), the preset functions' keywords and
the Hugging Face evaluate module take the same names (a flag's name with underscores). The table
is read from the settings themselves (:mod:`alignscore.settings`): the encoder's
(:class:`~alignscore.encoders.spec.EncoderSpec`), the runtime's, the cache's and those of every
registered part, so a part registered from outside the package gets its flags and help too. A
part setting's flag is ``--<setting>`` (or what the setting names); the same setting of several
parts of one stage is one option (``--reg`` sets sinkhorn's or baryscore's), and a name two
stages would share is given with the stage in front (``--aligner-tol``).

:func:`run_spec` layers the options given on ``--preset``'s spec, then on ``--config``'s file:
what an option names replaces what those say; a part setting applies to the part in place (or
selects the one part that takes it); a setting that only served a replaced part goes with it
(:func:`~alignscore.composition.merge_part`); two settings the caller gave that cannot go
together are one error naming both.
"""

from __future__ import annotations

import sys
import typing
from types import UnionType
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from .aggregators import AGGREGATORS
from .aligners import ALIGNERS
from .composition import CompositionSpec, PartSpec, merge_part, part_spec, to_part_spec
from .encoders.layers import LANG_FALLBACK, LANG_MODELS, model_for_lang
from .encoders.spec import EncoderSpec
from .errors import ConfigError
from .filters import FILTERS, SPECIAL_POLICIES
from .presets import PRESETS
from .registry import Registry
from .runtime import Runtime
from .settings import CHOICES, FLAG, HELP, OPTION, PARSE, float_list, int_list
from .spec import CacheSpec, RunSpec
from .weighting import WEIGHTINGS

STAGES: dict[str, Registry[Any]] = {"aggregator": AGGREGATORS, "weighting": WEIGHTINGS, "aligner": ALIGNERS}


@dataclass(frozen=True)
class Option:
    """One option: its keyword ``name``, command-line ``flag``, ``help``, the ``parse`` of its
    values (text or Python), and what it sets: ``target`` is ``"encoder"``, ``"runtime"``,
    ``"cache"``, ``"composition"``, a stage (``"aligner"``: a setting of the aligner in place),
    or ``"run"`` (a way of naming things: preset, config, lang, idf, stopwords, rescale)."""

    name: str
    flag: str
    help: str
    parse: Callable[[Any], Any]
    target: str
    setting: str
    boolean: bool = False
    multiple: bool = False
    choices: tuple[str, ...] | None = None
    envvar: str | None = None
    text: bool = True  # a keyword may give it as text (else only the command line: "3" for layer=3)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{what}: expected text, not {value!r}")
    return value


def _path(value: Any) -> str:
    """A file named by an option, as an absolute path (the spec holds no relative names)."""
    if isinstance(value, Path) or isinstance(value, str):
        return str(Path(value).resolve())
    raise ConfigError(f"expected a file name, not {value!r}")


def _parser(hint: Any, choices: tuple[str, ...] | None, what: str) -> Callable[[Any], Any]:
    """How a value of type ``hint`` is read from text or taken from Python."""
    kinds = (set(typing.get_args(hint)) - {type(None)}) if typing.get_origin(hint) in (typing.Union, UnionType) \
        else {hint}
    sequence = next((k for k in kinds if typing.get_origin(k) is tuple), None)
    if sequence is not None:
        inner = typing.get_args(sequence)[0]
        return (lambda v: float_list(v, "")) if inner is float else (lambda v: int_list(v, ""))

    def parse(value: Any) -> Any:
        if bool in kinds:
            if isinstance(value, bool):
                return value
            raise ConfigError(f"{what}: expected true or false, not {value!r}")
        if isinstance(value, str) and choices is not None:
            if value not in choices:
                raise ConfigError(f"{what}: one of {', '.join(choices)}, not {value!r}")
            return value
        if isinstance(value, str) and (int in kinds or float in kinds):
            try:
                return int(value) if int in kinds and value.lstrip("+-").isdigit() else float(value)
            except ValueError:
                if str in kinds:
                    return value
                raise ConfigError(f"cannot read {what} {value!r}") from None
        if isinstance(value, bool) and bool not in kinds:
            raise ConfigError(f"{what}: expected {' or '.join(sorted(k.__name__ for k in kinds if isinstance(k, type)))}, "
                              f"not {value!r}")
        return value

    return parse


def _hints(obj: Any) -> dict[str, Any]:
    """The type hints of a class or function, each resolved on its own: one that names a type
    imported only for type checking is read as "any value" without losing the others."""
    try:
        return typing.get_type_hints(obj)
    except Exception:  # noqa: BLE001
        pass
    out: dict[str, Any] = {}
    owners = [c for c in reversed(getattr(obj, "__mro__", [obj]))]
    for owner in owners:
        namespace = vars(sys.modules.get(owner.__module__, typing))
        for name, hint in getattr(owner, "__annotations__", {}).items():
            try:
                out[name] = eval(hint, namespace) if isinstance(hint, str) else hint  # noqa: S307 - our own source
            except Exception:  # noqa: BLE001
                out[name] = Any
    return out


def settings_of(factory: Any) -> list[tuple[str, Any, Mapping[str, Any], Any]]:
    """``(name, type hint, metadata, default)`` of each setting a part factory takes: a
    dataclass's init fields, or a function's parameters (whose metadata is read from the
    dataclass it returns, where it names one)."""
    if is_dataclass(factory):
        hints = _hints(factory)
        return [(f.name, hints.get(f.name, Any), f.metadata,
                 f.default if f.default is not MISSING else None)
                for f in fields(factory) if f.init and not f.name.startswith("_")]
    import inspect

    hints = _hints(factory)
    made = hints.get("return")
    meta = {f.name: f.metadata for f in fields(made)} if is_dataclass(made) else {}
    return [(name, hints.get(name, Any), meta.get(name, {}), None if p.default is p.empty else p.default)
            for name, p in inspect.signature(factory).parameters.items()
            if not name.startswith("_") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


def _field_option(name: str, hint: Any, meta: Mapping[str, Any], default: Any, target: str,
                  setting: str) -> Option | None:
    if meta.get(OPTION) is False:
        return None
    choices = meta.get(CHOICES)
    flag = meta.get(FLAG) or "--" + name.replace("_", "-")
    what = flag
    boolean = hint is bool or set(typing.get_args(hint)) - {type(None)} == {bool}
    help_text = meta.get(HELP) or f"{target} setting {name}"
    if default not in (None, "", MISSING) and not boolean and "default" not in help_text:
        help_text += f" (default: {default})"
    kinds = set(typing.get_args(hint)) | {hint}
    return Option(flag[2:].replace("-", "_"), flag, help_text, meta.get(PARSE) or _parser(hint, choices, what),
                  target, setting, boolean=boolean, choices=choices,
                  text=str in kinds or bool(choices) or meta.get(PARSE) is not None)


def _part_names(registry: Registry[Any], stage: str) -> Callable[[Any], PartSpec]:
    def parse(value: Any) -> PartSpec:
        return to_part_spec(value, f"--{stage}", registry)
    return parse


def options() -> dict[str, Option]:
    """Every option by name, in help order (registered parts, outside ones included)."""
    out: dict[str, Option] = {}

    def add(option: Option | None) -> None:
        if option is None:
            return
        same = out.get(option.name)
        if same is None:
            out[option.name] = option
        elif (same.target, same.setting) == (option.target, option.setting):  # one setting, several parts
            choices = tuple(dict.fromkeys((same.choices or ()) + (option.choices or ()))) or None
            out[option.name] = replace(same, choices=choices)
        else:  # another stage's setting of that name: named with its stage
            flag = f"--{option.target}-{option.flag[2:]}"
            add(replace(option, name=flag[2:].replace("-", "_"), flag=flag))

    run = "run"
    add(Option("preset", "--preset", "A named composition; the options below override its parts.",
               lambda v: _choice(v, PRESETS.names(), "--preset"), run, "preset", choices=tuple(PRESETS.names())))
    add(Option("config", "--config", "A composition file (TOML: the vocabulary of ablation grids; `alignscore "
               "config` and `alignscore tune` write one); the options below override what it says.", _path, run,
               "config"))
    for f in fields(EncoderSpec):
        add(_field_option(f.name, _hints(EncoderSpec).get(f.name), f.metadata, f.default, "encoder", f.name))
    add(Option("lang", "--lang", "The model BERTScore picks for texts in this language (bert_score's table: en "
               f"{LANG_MODELS['en']}, zh {LANG_MODELS['zh']}, any other {LANG_FALLBACK}); instead of --model.",
               lambda v: _text(v, "--lang"), run, "lang"))
    for stage, registry in STAGES.items():
        add(Option(stage, f"--{stage}", f"The {stage} by name: {', '.join(registry.names())}.",
                   _part_names(registry, stage), "composition", stage, choices=tuple(registry.names())))
    add(Option("special_tokens", "--special-tokens", "Special tokens: match-only (bert_score), drop, or keep "
               "(moverscore_v2).", lambda v: _choice(v, SPECIAL_POLICIES, "--special-tokens"), "composition",
               "special_tokens", choices=SPECIAL_POLICIES))
    add(Option("filters", "--filter", "Token filter(s) on ordinary tokens, added to those of the preset or "
               "file: rm (punctuation and non-first subwords), ms2-punct (moverscore_v2's string test). Stop "
               "words: --stopwords FILE.", _filters, "composition", "filters", multiple=True,
               choices=tuple(n for n in FILTERS.names() if n != "stopwords")))
    add(Option("stopwords", "--stopwords", "File of stop words, one per line: they take no part.", _path, run,
               "stopwords"))
    add(Option("idf", "--idf", "Same as --weighting idf-S (bert_score's --idf).", _flag("--idf"), run, "idf",
               boolean=True))
    add(Option("metric", "--metric", "Which of the aligner's outputs is the score (picks the best reference; "
               "diff ranks by it). Default: f1 for greedy, score for optimal transport.",
               lambda v: _text(v, "--metric"), "composition", "metric"))
    add(Option("multi_ref", "--multi-ref", "Several references: max per metric (bert_score) or mean.",
               lambda v: _choice(v, ("max", "mean"), "--multi-ref"), "composition", "multi_ref",
               choices=("max", "mean")))
    add(Option("rescale", "--rescale", "Rescale with --baseline.", _flag("--rescale"), run, "rescale",
               boolean=True))
    add(Option("baseline", "--baseline", "Baseline file in bert_score's format (LAYER,P,R,F); implies --rescale.",
               _baseline, "composition", "baseline"))
    for stage, registry in STAGES.items():
        for part in registry.names():
            for name, hint, meta, default in settings_of(registry.get(part)):
                add(_field_option(name, hint, meta, default, stage, name))
    hints = _hints(Runtime)
    for f in fields(Runtime):
        add(_field_option(f.name, hints.get(f.name), f.metadata, f.default, "runtime", f.name))
    hints = _hints(CacheSpec)
    for f in fields(CacheSpec):
        option = _field_option(f.name, hints.get(f.name), f.metadata, None, "cache", f.name)
        add(replace(option, envvar="ALIGNSCORE_CACHE") if option and f.name == "directory" else option)
    return out


def _choice(value: Any, allowed: Any, what: str) -> str:
    if value not in allowed:
        raise ConfigError(f"{what}: one of {', '.join(allowed)}, not {value!r}")
    return value


def _flag(what: str) -> Callable[[Any], bool]:
    def parse(value: Any) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{what}: expected true or false, not {value!r}")
        return value
    return parse


def _filters(value: Any) -> tuple[PartSpec, ...]:
    items = [value] if isinstance(value, (str, Mapping)) or not hasattr(value, "__iter__") else list(value)
    return tuple(to_part_spec(v, "--filter", FILTERS) for v in items)


def _baseline(value: Any) -> Any:
    from .baseline import Baseline

    return value if isinstance(value, Baseline) else _path(value)


def run_spec(given: Mapping[str, Any], style: str = "python", where: str = "") -> RunSpec:
    """The :class:`RunSpec` that options describe (see the module's docstring). ``given`` maps
    option names to values (text as on the command line, or Python values; ``None`` is "not
    given"); ``style`` is how errors name them: ``"cli"`` (``--n-gram``) or ``"python"`` (``n_gram=``)."""
    table = options()
    unknown = sorted(k for k in given if k not in table)
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; alignscore takes: {', '.join(sorted(table))}")
    label = (lambda k: table[k].flag) if style == "cli" else (lambda k: f"{k}=")
    opts: dict[str, Any] = {}
    for key, value in given.items():
        if value is None or (table[key].multiple and value == ()) or (table[key].target == "run" and value is False):
            continue
        if style == "python" and isinstance(value, str) and not table[key].text:
            raise ConfigError(f"{label(key)} expects a number or a list, not the text {value!r}")
        try:
            opts[key] = table[key].parse(value)
        except ConfigError as exc:
            text = str(exc).replace(table[key].flag, label(key))  # the option as the caller gave it
            raise ConfigError(text if label(key) in text else f"{label(key)}: {text}") from None
    base = RunSpec()
    if "preset" in opts:
        base = PRESETS.get(opts["preset"]).spec
    if "config" in opts:
        base = RunSpec.read(opts["config"], base)

    def by(target: str) -> dict[str, Any]:
        return {table[k].setting: v for k, v in opts.items() if table[k].target == target}

    encoder = by("encoder")
    if "lang" in opts:
        if "model" in opts:
            raise ConfigError(f"{label('lang')} picks the model (BERTScore's for that language); give "
                              f"{label('lang')} or {label('model')}, not both")
        encoder["model"] = model_for_lang(opts["lang"])
    runtime, cache = by("runtime"), by("cache")
    cache_spec = CacheSpec.of(cache.pop("directory")) if "directory" in cache else base.cache
    if cache:
        if cache_spec is None:
            raise ConfigError(f"{label('cache_size')} bounds the cache of {label('cache')} DIR: give both")
        cache_spec = replace(cache_spec, **cache)
    try:
        return RunSpec(replace(base.encoder, **encoder), _composition(base.composition, opts, table, label, where),
                       replace(base.runtime, **runtime), cache_spec)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where and not str(exc).startswith(where) else str(exc)) from None


def _composition(base: CompositionSpec, opts: dict[str, Any], table: dict[str, Option],
                 label: Callable[[str], str], where: str) -> CompositionSpec:
    parts = {}
    for stage, registry in STAGES.items():
        named: PartSpec | None = opts.get(stage)
        settings = {table[k].setting: v for k, v in opts.items() if table[k].target == stage}
        by_label = {table[k].setting: label(k) for k in opts if table[k].target == stage}
        if stage == "weighting" and opts.get("idf"):
            if named is not None and named.name != "idf-S":
                raise ConfigError(f"{label('idf')} means weighting idf-S; it cannot go with "
                                  f"{label('weighting')} {named.name}")
            named = named or PartSpec("idf-S")
        if named is not None:
            clash = next((k for k, v in named.args if k in settings and settings[k] != v), None)
            if clash is not None:
                raise ConfigError(f"{label(stage)} {named} and {by_label[clash]} both set its {clash}; give one")
            settings = {**dict(named.args), **settings}
        parts[stage] = merge_part(registry, getattr(base, stage), named.name if named else None, settings, where,
                                  lambda k: by_label.get(k, k), label(stage))
    filters = base.filters + tuple(f for f in opts.get("filters", ()) if f not in base.filters)
    if "stopwords" in opts:
        filters += (PartSpec.of("stopwords", {"file": opts["stopwords"]}),)
    baseline = opts.get("baseline", base.baseline)
    if opts.get("rescale") and baseline is None:
        raise ConfigError(f"{label('rescale')} needs {label('baseline')} FILE (make one with `alignscore baseline`)")
    return CompositionSpec(parts["aggregator"], opts.get("special_tokens", base.special_tokens), filters,
                           parts["weighting"], parts["aligner"], opts.get("metric", base.metric),
                           opts.get("multi_ref", base.multi_ref), baseline)


def option_files(spec: RunSpec, given: Mapping[str, Any]) -> list[str]:
    """The input files a run reads besides its texts: the composition file and every file the
    spec names (which no output may overwrite)."""
    return ([str(given["config"])] if given.get("config") else []) + spec.files()


__all__ = ["Option", "STAGES", "option_files", "options", "run_spec", "settings_of"]
