"""The one compiler: mappings of options -> a :class:`~alignscore.config.spec.RunSpec`.

Every way in hands over one or more *sources*, each a mapping of option names
(:mod:`alignscore.config.schema`) to values, and how the user wrote each of them (``--n-gram``,
``n_gram=``, ``best.toml:4: n_gram``, ``table9.toml:31: rows[3].layer``). :func:`compile_run`
merges them, lowest first, by one rule:

1. Precedence: a later source replaces what an earlier one says. The sources, lowest first:
   a preset *or* a run file (``--preset`` and ``--config`` together are refused: a file
   already fixes every setting), then the flags or keywords. A grid cell is the cell's model
   role, the command's flags, the grid's ``[defaults]``, its column, its row; a search
   candidate is the command's flags, then the candidate (the space's choice wins).
2. Parts: naming another part replaces the current one; of the settings that came with the
   old part, those the new part takes too are kept (wmd -> sinkhorn keeps ``cost`` and
   ``n_gram``) and the others go with it. A setting given without a part applies to the
   current part, or selects the one registered part that takes it (``--n-gram 2`` alone is
   refused: wmd and sinkhorn both take it; ``--beta 2`` is greedy's); a setting the part named
   beside it does not take is refused.
3. Token filters add up over the sources (a filter named again replaces its settings);
   ``filters = []`` (``--filters none``) clears those below.
4. A setting that requires another (``window_stride`` requires ``long_texts = "window"``,
   ``cache_size`` a ``cache``, ``baseline`` rescaling) is refused when the requirement fails in
   the same or a higher source, and goes with the requirement when a higher source changed it.
   ``baseline = FILE`` implies ``rescale``; ``--no-rescale`` switches a lower source's off.

Then every part is built (files read) and checked where it is made (the declarations of
:mod:`alignscore.settings`), the parts are checked against each other
(:class:`~alignscore.composition.Composition`) and against the encoder; an error names the
option as the user wrote it. Nothing here loads a model: :func:`alignscore.config.build.build`
does the checks that need the model's configuration (its depth, its tokenizer).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ..baseline import Baseline
from ..cache import CacheSpec, EmbeddingCache
from ..composition import Composition
from ..encoders.layers import model_for_lang
from ..encoders.spec import EncoderSpec
from ..errors import ConfigError
from ..filters import FILTERS, TokenFilter, TokenRoles
from ..runtime import Runtime
from ..settings import RequirementError, SettingError, settings_of
from .files import dotted, line_of, load_toml
from .presets import PRESETS
from .schema import DEFAULT_PARTS, STAGES, aliases, options, part_aliases, part_settings, registry_of
from .spec import RunSpec

CLEAR = "none"  # --filters none: no filter from the sources below

Label = Callable[[tuple[Any, ...]], str]


class Given(NamedTuple):
    """A value, how the user wrote it, and the rank of its source (higher wins)."""

    value: Any
    label: str
    rank: int


@dataclass(frozen=True)
class Source:
    """One mapping of options, normalised: ``values`` by option name (part tables spread into
    the part's name and its settings; ``filters`` as ``[(name, {setting: value})]``),
    ``labels`` saying how each was written, and ``style`` how an option it does not give would
    be named in an error (``"flag"``, ``"keyword"`` or ``"key"``)."""

    kind: str
    values: Mapping[str, Any]
    labels: Mapping[str, str]
    style: str = "keyword"
    filter_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    base: tuple["Source", ...] = ()

    def layers(self) -> list["Source"]:
        """This source after the ones it is based on (the preset or run file it names), lowest first."""
        return [*(b for src in self.base for b in src.layers()), self]


def flag_label(path: tuple[Any, ...]) -> str:
    return "--" + str(path[0]).replace("_", "-") + "".join(f" ({p})" for p in path[1:])


def keyword_label(path: tuple[Any, ...]) -> str:
    return f"{path[0]}=" + "".join(f"[{p!r}]" for p in path[1:])


#: a switch as each source spells it, for a value that is not one
SWITCH = {"flag": "{flag} or --no-{bare}", "keyword": "True or False",
          "key": "true or false (a TOML boolean, without quotes)"}


def name_in(style: str, name: str) -> str:
    """How an option the user did not give is named in an error, in the style of the source."""
    return {"flag": flag_label, "keyword": keyword_label}.get(style, lambda p: str(p[0]))((name,))


# -- sources ------------------------------------------------------------------------------------
def make_source(mapping: Mapping[str, Any], kind: str, label: Label, base_dir: str | Path | None = None,
                text: bool = False, style: str = "keyword") -> Source:
    """A :class:`Source` from a mapping of options (names or declared aliases). ``label`` names a
    key path as the user wrote it; ``base_dir`` is where relative file names are read from (the
    working directory by default); ``text``: values are text to read (the command line).
    Values that are ``None`` are "not given". Unknown options and unreadable values are errors
    naming them. A ``preset`` (anywhere) or a ``config`` file (flags and keywords only) becomes
    the source's :attr:`~Source.base`: the mapping's own keys override it, as flags override
    ``--preset``; in a grid or a space the model is the role's or the command's, so a preset
    there gives its composition without its model."""
    table, older = options(), aliases()
    root = Path(base_dir) if base_dir is not None else None
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    filter_labels: dict[str, dict[str, str]] = {}
    for key, value in mapping.items():
        if value is None:
            continue
        name = key if key in table else older.get(key)
        if name is None:
            raise ConfigError(f"{label((key,))}: no such option{_close(key, table)} (the options: "
                              "alignscore score --help; docs/cli-reference.md)")
        if name in values:
            raise ConfigError(f"{label((key,))} and {labels[name]} both give {name}: give one")
        option = table[name]
        if option.group == "source" and (kind == "preset" or name == "config" and kind not in ("flags", "keywords")):
            raise ConfigError(f"{label((key,))}: a {name} is a whole run: it cannot be part of one here")
        if option.multiple and value == ():
            continue
        if name in STAGES:
            part, settings = _part_value(name, value, label, (key,))
            values[name], labels[name] = part, label((key,))
            for setting, (v, lab) in settings.items():
                if setting in values or mapping.get(setting) is not None:
                    raise ConfigError(f"{lab} and {labels.get(setting) or label((setting,))} both give {setting}: "
                                      "give one")
                values[setting], labels[setting] = _read(table[setting], v, lab, text, root, style), lab
            continue
        if name == "cache" and isinstance(value, EmbeddingCache):  # a cache object stands for its settings
            for name, setting in (("cache", str(Path(value.directory).resolve())), ("cache_size", value.max_bytes),
                                  ("cache_timeout", value.timeout_s)):
                if name == "cache" or name not in mapping:
                    values[name], labels[name] = setting, label((key,))
            continue
        if name == "filters":
            items = _filters(value, label, (key,), text)
            values[name], labels[name] = [(n, {k: _read(table[k], v, lab, text, root, style)
                                               for k, (v, lab) in s.items()})
                                          for n, s in items], label((key,))
            filter_labels.update({n: {k: lab for k, (_, lab) in s.items()} for n, s in items})
            continue
        values[name], labels[name] = _read(option, value, label((key,)), text, root, style), label((key,))
    preset, config = values.pop("preset", None), values.pop("config", None)
    if preset is not None and config is not None:
        raise ConfigError(f"{labels['preset']} and {labels['config']} both give a whole run: give one (a run "
                          "file already fixes every setting; it may name its preset: preset = NAME)")
    base = (preset_source(preset, model=kind not in ("grid", "space")),) if preset is not None else \
        (file_source(config),) if config is not None else ()
    return Source(kind, values, labels, style, filter_labels, base)


def _close(key: str, table: Mapping[str, Any]) -> str:
    import difflib

    near = difflib.get_close_matches(key.replace("-", "_"), list(table), n=1)
    return f" (did you mean {near[0]}?)" if near else ""


def _read(option: Any, value: Any, label: str, text: bool, root: Path | None, style: str = "keyword") -> Any:
    """A value as the option holds it: text read (always from the command line; elsewhere
    where the setting is a list, or declares how it reads text), files resolved."""
    s = option.setting
    if option.boolean and not isinstance(value, bool):  # never read from a text: "no" is not false
        spelled = SWITCH.get(style, SWITCH["key"]).format(flag=option.flag, bare=option.flag[2:])
        raise ConfigError(f"{label}: {spelled}, not {value!r}", (option.name,))
    if option.name == "baseline" and not isinstance(value, (str, os.PathLike, Baseline)):
        raise ConfigError(f"{label}: expected a file name, not {value!r}", (option.name,))
    try:
        if isinstance(value, str) and (text or (s is not None and (s.sequence is not None and str not in s.kinds
                                                                   or s.decl.parse is not None))
                                       or option.read is not None):
            value = option.parse_text(value)
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}", (option.name,)) from None
    if option.file and isinstance(value, (str, os.PathLike)):
        path = Path(value).expanduser()
        value = str((root / path if root is not None and not path.is_absolute() else path).resolve())
    if option.name == "model" and isinstance(value, str) and value.strip():
        path = Path(value).expanduser()
        local = root / path if root is not None and not path.is_absolute() else path
        if local.exists():
            value = str(local.resolve())
    if option.multiple and isinstance(value, str):
        value = [value]
    if option.choices is not None and s is None and option.name not in STAGES and value not in option.choices:
        raise ConfigError(f"{label}: one of {', '.join(option.choices)}, not {value!r}", (option.name,))
    if s is not None and len(option.parts) <= 1:  # one declaration: the value's type and range now
        try:
            value = s.check(value)
        except SettingError as exc:
            raise ConfigError(f"{label}: {exc.reason}", (option.name,)) from None
    return value


def _part_value(stage: str, value: Any, label: Label, path: tuple[Any, ...]
                ) -> tuple[str, dict[str, tuple[Any, str]]]:
    """A stage's part as given: a name, a table ``{name = ..., setting = ...}`` or (Python) a
    part object, as its name and ``{setting: (value, label)}``."""
    registry = registry_of(stage)
    if isinstance(value, str):
        _known(registry, value, label(path))
        return value, {}
    if isinstance(value, Mapping):
        name = value.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"{label(path)}: a table with `name` (the {stage}'s name) and its settings, "
                              f"not {value!r}")
        _known(registry, name, label(path + ("name",)))
        takes, older = part_settings(stage, name), part_aliases(stage, name)
        out: dict[str, tuple[Any, str]] = {}
        for k, v in value.items():
            if k == "name":
                continue
            setting = k if k in takes else older.get(k)
            if setting is None:
                raise ConfigError(f"{label(path + (k,))}: {stage} {name} has no setting {k!r} "
                                  f"(its settings: {', '.join(takes) or 'none'})")
            out[setting] = (v, label(path + (k,)))
        return name, out
    for name in registry.names():
        if type(value) is registry.get(name):
            return name, {s.name: (getattr(value, s.name), label(path)) for s in settings_of(type(value))
                          if s.decl.option}
    raise ConfigError(f"{label(path)}: a {stage} name ({', '.join(registry.names())}), a table with `name`, or a "
                      f"registered {stage} object, not {value!r}")


def _known(registry: Any, name: str, label: str) -> None:
    if name not in registry.names():
        raise ConfigError(f"{label}: no {registry.stage} {name!r} (there are: {', '.join(registry.names())})")


def _filters(value: Any, label: Label, path: tuple[Any, ...], text: bool
             ) -> list[tuple[str, dict[str, tuple[Any, str]]]]:
    if isinstance(value, (str, Mapping, TokenFilter)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{label(path)}: a list of token filters, not {value!r}")
    items: list[Any] = []
    for item in value:
        items += [p.strip() for p in item.split(",") if p.strip()] if text and isinstance(item, str) else [item]
    if items == [CLEAR]:
        return []
    out = []
    for i, item in enumerate(items):
        name, settings = _part_value("filter", item, label, path + (i,) if len(items) > 1 else path)
        out.append((name, settings))
    return out


def file_source(path: str | Path) -> Source:
    """The source a run file gives (its keys named ``file:line: key``)."""
    data, lines = load_toml(path)
    for key, value in data.items():
        if key == "config":
            raise ConfigError(f"{path}:{lines.get((key,), '?')}: {key}: a run file holds options, not another "
                              "run file (it may name a preset: preset = NAME)")
        if isinstance(value, dict) and key not in STAGES:
            raise ConfigError(f"{path}:{lines.get((key,), '?')}: [{key}]: a run file's keys are options (write "
                              f"them at the top level, e.g. batch_size = 32), not tables")
    return make_source(data, "file", lambda p: f"{path}:{line_of(lines, p) or '?'}: {dotted(p)}",
                       Path(path).resolve().parent, style="key")


def preset_source(name: str, model: bool = True) -> Source:
    """The source a preset gives (its options named ``preset NAME: key``); ``model=False``: its
    composition only (a grid's or a space's model is the role's or the command's).

    Examples
    --------
    >>> preset_source("moverscore-v2").values["aligner"]
    'wmd'
    >>> "model" in preset_source("moverscore-v2", model=False).values
    False
    """
    options = {k: v for k, v in PRESETS.get(name).options.items() if model or k != "model"}
    return make_source(options, "preset", lambda p: f"preset {name}: {dotted(p)}", style="key")


def flat(sources: Sequence[Source]) -> list[Source]:
    """``sources`` with the ones each is based on before it (:meth:`Source.layers`), lowest first."""
    return [replace(s, base=()) for src in sources for s in src.layers()]


def sources_of(given: Mapping[str, Any], style: str = "keyword", base_dir: str | Path | None = None,
               kind: str | None = None, label: Label | None = None) -> list[Source]:
    """The sources a mapping of options describes, lowest first: the preset or run file it names
    (:func:`make_source`), then itself. ``style``: ``"flag"`` (the command line: text values are
    read as the command line reads them), ``"keyword"`` (Python) or ``"key"`` (a file, a grid's
    entry or a space's, with its ``kind`` and ``label``: ``"grid"`` or ``"space"`` take a
    preset's composition, not its model).

    Examples
    --------
    >>> [s.kind for s in sources_of({"preset": "moverscore-v2", "n_gram": 2})]
    ['preset', 'keywords']
    >>> row = sources_of({"preset": "moverscore-v2", "layer": 4}, "key", kind="grid", label=str)
    >>> compile_run(row).composition.aligner.cost
    'euclidean'
    """
    flags = style == "flag"
    kind = kind or ("flags" if flags else "keywords")
    label = label or (flag_label if flags else keyword_label)
    return flat([make_source(given, kind, label, base_dir, flags, style)])


def run_spec(given: Mapping[str, Any], style: str = "keyword", where: str = "",
             base_dir: str | Path | None = None) -> RunSpec:
    """The :class:`RunSpec` that flags or keywords describe (the preset or run file they name
    first): :func:`sources_of` then :func:`compile_run`. ``given`` maps option names to values
    (``None``: not given); ``where`` names the caller in errors (``"moverscore_v2()"``)."""
    try:
        return compile_run(sources_of(given, style, base_dir))
    except ConfigError as exc:
        if not where:
            raise
        raise ConfigError(f"{where}: {exc}", exc.options) from None


# -- merging --------------------------------------------------------------------------------------
@dataclass
class Merged:
    """Every option after the merge, each with how it was given and its source's rank."""

    simple: dict[str, Given] = field(default_factory=dict)
    parts: dict[str, tuple[Given | None, dict[str, Given]]] = field(
        default_factory=lambda: {stage: (None, {}) for stage in STAGES})
    filters: dict[str, tuple[Given, dict[str, Given]]] = field(default_factory=dict)
    style: str = "keyword"

    def part(self, stage: str) -> str:
        """The name of the part of ``stage`` (the default part where none is named)."""
        named = self.parts[stage][0]
        return named.value if named is not None else DEFAULT_PARTS[stage]

    def given(self, name: str) -> Given | None:
        if name in self.simple:
            return self.simple[name]
        for named, settings in self.parts.values():
            if name in settings:
                return settings[name]
        for named, settings in self.filters.values():
            if name in settings:
                return settings[name]
        return None

    def label(self, name: str) -> str:
        """The option as the user wrote it, or as the top source would name it."""
        given = self.given(name)
        if given is not None:
            return given.label
        if name in self.parts and self.parts[name][0] is not None:
            return self.parts[name][0].label  # type: ignore[union-attr]
        return name_in(self.style, name)

    def labels(self) -> dict[str, str]:
        out = {k: g.label for k, g in self.simple.items()}
        for stage, (named, settings) in self.parts.items():
            if named is not None:
                out[stage] = named.label
            out.update({k: g.label for k, g in settings.items()})
        for named, settings in self.filters.values():
            out.setdefault("filters", named.label)
            out.update({k: g.label for k, g in settings.items()})
        return out


def merge(sources: Sequence[Source]) -> Merged:
    """The options of ``sources`` merged, lowest first (the module's rules 1 to 3)."""
    table = options()
    sources = flat(sources)
    out = Merged(style=sources[-1].style if sources else "keyword")
    for rank, src in enumerate(sources):
        values = dict(src.values)
        given = {k: Given(v, src.labels[k], rank) for k, v in values.items()}
        if "lang" in given:
            if "model" in given:
                raise ConfigError(f"{given['lang'].label} picks the model (BERTScore's for that language): give "
                                  f"{given['lang'].label} or {given['model'].label}, not both")
            lang = given.pop("lang")
            given["model"] = Given(model_for_lang(lang.value), lang.label, rank)
        if "idf" in given:
            idf = given.pop("idf")
            meant = "idf-S" if idf.value else "none"
            if "weighting" in given and given["weighting"].value != meant:
                raise ConfigError(f"{idf.label} means weighting {meant}; it cannot go with "
                                  f"{given['weighting'].label} {given['weighting'].value}")
            given["weighting"] = Given(meant, idf.label, rank)
        for name, g in given.items():
            option = table[name]
            if option.group in ("encoder", "runtime", "cache") or (option.group == "composition"
                                                                    and name not in STAGES and name != "filters"):
                out.simple[name] = g
        for stage in STAGES:
            settings = {k: g for k, g in given.items() if table[k].group == stage}
            out.parts[stage] = _merge_part(stage, out.parts[stage], given.get(stage), settings)
        _merge_filters(out, given, src, rank)
    _requirements(out)
    return out


def _merge_part(stage: str, current: tuple[Given | None, dict[str, Given]], named: Given | None,
                settings: dict[str, Given]) -> tuple[Given | None, dict[str, Given]]:
    old_named, old = current
    old_name = old_named.value if old_named is not None else DEFAULT_PARTS[stage]
    target = named.value if named is not None else old_name
    # a switch given off to a part without it says nothing: the part has it off
    settings = {k: g for k, g in settings.items() if g.value is not False or k in part_settings(stage, target)}
    if named is not None:
        takes = part_settings(stage, named.value)
        wrong = [k for k in settings if k not in takes]
        if wrong:
            raise _not_taken(stage, wrong[0], settings[wrong[0]].label, named.value, named.label)
        kept = dict(old) if named.value == old_name else {k: g for k, g in old.items() if k in takes}
        return named, {**kept, **settings}
    if not settings:
        return current
    takes = part_settings(stage, old_name)
    if all(k in takes for k in settings):
        return old_named, {**old, **settings}
    takers = [n for n in registry_of(stage).names() if all(k in part_settings(stage, n) for k in settings)]
    first = next(iter(settings.values()))
    if len(takers) == 1:
        return _merge_part(stage, current, Given(takers[0], first.label, first.rank), settings)
    missing = next(k for k in settings if k not in takes)
    raise _not_taken(stage, missing, settings[missing].label, old_name,
                     old_named.label if old_named is not None else None)


def _not_taken(stage: str, setting: str, label: str, part: str, part_label: str | None) -> ConfigError:
    takers = [n for n in registry_of(stage).names() if setting in part_settings(stage, n)]
    which = f"{stage} {' or '.join(takers)}" if takers else "no registered part"
    current = f"{part} ({part_label})" if part_label else f"{part} (the default)" if part == DEFAULT_PARTS.get(stage) \
        else part
    hint = f"; name one ({' or '.join(takers)})" if len(takers) > 1 else ""
    return ConfigError(f"{label}: applies to {which}, not to {stage} {current}{hint}", (setting,))


def _merge_filters(out: Merged, given: dict[str, Given], src: Source, rank: int) -> None:
    table = options()
    if "filters" in given:
        items = given["filters"].value
        if not items:
            out.filters = {}
        for name, settings in items:
            labels = src.filter_labels.get(name, {})
            out.filters[name] = (Given(name, given["filters"].label, rank),
                                 {k: Given(v, labels.get(k, given["filters"].label), rank)
                                  for k, v in settings.items()})
    flat = {k: g for k, g in given.items() if table[k].group == "filter"}
    if not flat:
        return
    takers = [n for n in FILTERS.names() if all(k in part_settings("filter", n) for k in flat)]
    if len(takers) != 1:
        k, g = next(iter(flat.items()))
        raise ConfigError(f"{g.label}: applies to no one token filter", (k,))
    name = takers[0]
    named, settings = out.filters.get(name, (Given(name, next(iter(flat.values())).label, rank), {}))
    out.filters[name] = (named, {**settings, **flat})


def _requirements(out: Merged) -> None:
    """Rule 4 of the module's docstring."""
    simple = out.simple
    for name, g in list(simple.items()):
        option = options()[name]
        for other, allowed in (option.setting.decl.requires.items() if option.setting else ()):
            holder = simple.get(other)
            value = holder.value if holder is not None else _default(other)
            if value not in allowed and holder is not None and holder.rank > g.rank:
                del simple[name]  # the requirement was changed above it: it goes too
    rescale, baseline = simple.get("rescale"), simple.get("baseline")
    if baseline is not None and (rescale is None or baseline.rank > rescale.rank):
        simple["rescale"] = Given(True, baseline.label, baseline.rank)
    elif rescale is not None and baseline is not None and not rescale.value:
        if baseline.rank == rescale.rank:
            raise ConfigError(f"{baseline.label}: rescales; it cannot go with {rescale.label}", ("baseline",))
        del simple["baseline"]
    rescale = simple.get("rescale")
    if rescale is not None and rescale.value and "baseline" not in simple:
        raise ConfigError(f"{rescale.label} needs a baseline file ({name_in(out.style, 'baseline')} FILE; "
                          "`alignscore baseline` makes one)", ("rescale",))
    for name in ("cache_size", "cache_timeout"):
        if name in simple and "cache" not in simple:
            raise ConfigError(f"{simple[name].label}: applies with {name_in(out.style, 'cache')} DIR only", (name,))


def _rank(merged: Merged, name: str) -> int:
    """The rank of the source that gave an option (or named a stage's part)."""
    given = merged.given(name)
    if given is not None:
        return given.rank
    named = merged.parts[name][0] if name in merged.parts else None
    return named.rank if named is not None else -1


def _default(name: str) -> Any:
    option = options()[name]
    return option.setting.default if option.setting is not None else None


def supply(merged: Merged, values: Mapping[str, Any], label: str = "(data)") -> None:
    """Settings that the data provide (a language pair's idf-L corpus) where the part chosen
    takes them and the sources do not give them; they never select a part."""
    table = options()
    for name, value in values.items():
        stage = table[name].group
        named, settings = merged.parts[stage]
        if name not in settings and name in part_settings(stage, merged.part(stage)):
            settings[name] = Given(value, label, -1)


# -- building -----------------------------------------------------------------------------------
def compile_run(sources: Sequence[Source], data: Mapping[str, Any] | None = None) -> RunSpec:
    """The :class:`RunSpec` of ``sources`` (lowest first; see the module's docstring), with
    ``data`` supplied where the chosen parts take it (:func:`supply`)."""
    merged = merge(sources)
    if data:
        supply(merged, data)
    return construct(merged)


def construct(merged: Merged) -> RunSpec:
    """Build and check every part of a merged run; errors name the options as written."""
    table = options()
    values = {k: g.value for k, g in merged.simple.items()}

    def group(name: str) -> dict[str, Any]:
        return {k: v for k, v in values.items() if table[k].group == name}

    parts = {}
    for stage, registry in STAGES.items():
        named, settings = merged.parts[stage]
        name = merged.part(stage)
        parts[stage] = _made(merged, lambda: registry.get(name)(**{k: g.value for k, g in settings.items()}),
                             named.label if named is not None else None)
    filters = tuple(_made(merged, lambda n=name, s=settings: FILTERS.get(n)(**{k: g.value for k, g in s.items()}),
                          named.label) for name, (named, settings) in merged.filters.items())
    composition_values = group("composition")
    baseline = composition_values.get("baseline") if composition_values.get("rescale") else None
    if isinstance(baseline, str):
        baseline = Baseline.read(baseline)
    composition = _made(merged, lambda: Composition(
        parts["aggregator"], TokenRoles(composition_values.get("special_tokens", "match-only"), filters),
        parts["weighting"], parts["aligner"], composition_values.get("metric"),
        composition_values.get("multi_ref", "max"), baseline))
    runtime = _made(merged, lambda: Runtime(**group("runtime")))
    cache = _made(merged, lambda: CacheSpec(**group("cache"))) if "cache" in values else None
    encoder = _made(merged, lambda: EncoderSpec(**group("encoder")))
    # the pairings, then the model's existence: the last check (RunSpec's own)
    return _made(merged, lambda: RunSpec(encoder, composition, runtime, cache, merged.labels(), merged.style))


def _made(merged: Merged, make: Callable[[], Any], part_label: str | None = None) -> Any:
    """``make()``, with a ConfigError about options renamed as the user wrote them."""
    try:
        return make()
    except SettingError as exc:
        label = merged.label(exc.field) if merged.given(exc.field) or not part_label else \
            f"{part_label} ({name_in(merged.style, exc.field)})"
        reason = exc.named(lambda o: name_in(merged.style, o)) if isinstance(exc, RequirementError) else exc.reason
        raise ConfigError(f"{label}: {reason}", exc.options) from None
    except ConfigError as exc:
        if not exc.options:
            raise
        named = [o for o in exc.options if merged.given(o) or (o in merged.parts and merged.parts[o][0])]
        label = merged.label(max(named, key=lambda o: _rank(merged, o)) if named else exc.options[0])
        raise ConfigError(f"{label}: {exc.message}", exc.options) from None
    except TypeError as exc:  # a part from outside the package that takes its settings differently
        raise ConfigError(f"{part_label or 'a part'}: {str(exc).strip().splitlines()[0]}") from None


__all__ = ["CLEAR", "Given", "Merged", "Source", "compile_run", "construct", "file_source", "flag_label",
           "keyword_label", "make_source", "merge", "preset_source", "run_spec", "sources_of", "supply"]
