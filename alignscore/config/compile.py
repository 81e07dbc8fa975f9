"""The one compiler: sources (mappings of options) -> a :class:`~alignscore.config.spec.RunSpec`.

Each source keeps how the user wrote each option (``--n-gram``, ``n_gram=``, ``best.toml:4:
n_gram``). :func:`merge` merges the sources, lowest first, by the rules of docs/concepts.md
("Sources and precedence"): 1. a higher source replaces a lower one; 2. naming another part
keeps the settings the new part takes too; 3. token filters add up (``filters = []`` clears
them); 4. what a setting requires or implies, from its declaration.

:func:`construct` then builds and checks every part; an error names the option as written.
Nothing here loads a model (:func:`~alignscore.config.build.build` does the checks that need
its configuration).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ..cache import CacheSpec
from ..composition import CompositionOptions
from ..encoders.spec import EncoderSpec
from ..errors import ConfigError
from ..filters import FILTERS
from ..runtime import Runtime
from ..settings import RequirementError, allows
from .schema import DEFAULT_PARTS, FILTER_LIST, MODEL_OPTIONS, OPTION, STAGES, options, part_settings, takers
from .sources import KEYWORDS, Naming, Provenance, Source, flat, make_source, preset_source, sources_of
from .spec import RunSpec


class Given(NamedTuple):
    """A value, how the user wrote it, and the rank of its source (higher wins)."""

    value: Any
    label: str
    rank: int


def run_spec(given: Mapping[str, Any], naming: Naming = KEYWORDS, where: str = "") -> RunSpec:
    """The :class:`RunSpec` that flags or keywords describe (the preset or run file they name
    first): :func:`sources_of` then :func:`compile_run`.

    Parameters
    ----------
    given : option names (or declared aliases) to values; ``None`` is "not given".
    naming : how they are written (:func:`sources_of`'s: Python's keywords by default).
    where : names the caller in errors (``"moverscore_v2()"``).

    Returns
    -------
    RunSpec
        Checked whole (every value, part and pairing, then whether a local model exists);
        nothing loaded.

    Examples
    --------
    >>> spec = run_spec({"preset": "moverscore-v2", "n_gram": 2})
    >>> spec.encoder.model, spec.composition.aligner.n_gram
    ('distilbert-base-uncased', 2)
    >>> run_spec({"n_gram": 0, "aligner": "wmd"})
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: n_gram=: expected an integer >= 1 or one of sentence, not 0
    """
    return run_compiled(given, naming, where).spec


def run_compiled(given: Mapping[str, Any], naming: Naming = KEYWORDS, where: str = "") -> Compiled:
    """:func:`run_spec`, with the :class:`Provenance` of its options beside the spec.

    Parameters
    ----------
    given, naming, where : as :func:`run_spec`'s.

    Returns
    -------
    Compiled

    Examples
    --------
    >>> run_compiled({"aligner": "wmd", "n_gram": 2}).provenance.labels
    {'aligner': 'aligner=', 'n_gram': 'n_gram='}
    """
    try:
        return compile_labelled(sources_of(given, naming))
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
    naming: Naming = KEYWORDS

    def part(self, stage: str) -> str:
        """The name of the part of ``stage`` (the default part where none is named)."""
        named = self.parts[stage][0]
        return named.value if named is not None else DEFAULT_PARTS[stage]

    def given(self, name: str) -> Given | None:
        tables = [self.simple, *(s for _, s in self.parts.values()), *(s for _, s in self.filters.values())]
        return next((t[name] for t in tables if name in t), None)

    def provenance(self) -> Provenance:
        """How each option (and each stage's part named) was given, and its source's rank."""
        given = dict(self.simple)
        for stage, (named, settings) in self.parts.items():
            given.update({stage: named} if named is not None else {}, **settings)
        for named, settings in self.filters.values():
            given.setdefault(FILTER_LIST, named)
            given.update(settings)
        return Provenance({k: g.label for k, g in given.items()}, self.naming, {k: g.rank for k, g in given.items()})


def merge(sources: Sequence[Source]) -> Merged:
    """The options of ``sources`` merged, lowest first (the module's rules 1 to 3)."""
    table = options()
    sources = flat(sources)
    out = Merged(naming=sources[-1].naming if sources else KEYWORDS)
    for rank, src in enumerate(sources):
        given = {k: Given(v, src.labels[k], rank) for k, v in src.values.items()}
        for name in [k for k in given if table[k].means]:  # shorthands: lang is a model, idf a weighting
            short = given.pop(name)
            target, read = table[name].means  # type: ignore[misc]
            try:
                meant, other = read(short.value), given.get(target)
            except ConfigError as exc:  # the shorthand's value, named as written: "--lang 'XX' is not ..."
                raise ConfigError(f"{short.label} {exc.message}", (name,)) from None
            if other is not None and other.value != meant:
                raise ConfigError(f"{short.label} means {target} {meant}; it cannot go with {other.label} "
                                  f"{other.value}: give one{_beside(name, target, src.naming)}", (name,))
            given[target] = Given(meant, short.label, rank)
        # the encoder's, the runtime's, the cache's, the composition's own options
        out.simple.update({k: g for k, g in given.items()
                           if table[k].group not in (*STAGES, "filter") and k not in (*STAGES, FILTER_LIST)})
        for stage in STAGES:
            settings = {k: g for k, g in given.items() if table[k].group == stage}
            out.parts[stage] = _merge_part(stage, out.parts[stage], given.get(stage), settings)
        _merge_filters(out, given, src, rank)
    _requirements(out)
    return out


def _beside(shorthand: str, target: str, naming: Naming) -> str:
    """What bert_score does with a language beside a model, where it differs (it picks only the baseline file)."""
    if (shorthand, target) != (MODEL_OPTIONS[1], MODEL_OPTIONS[0]):
        return ""
    return (f" (bert_score keeps its model_type and reads its lang only for the baseline file: here leave "
            f"{naming.name(shorthand)} out and give {naming.name(OPTION.baseline.name)} that file)")


def _merge_part(stage: str, current: tuple[Given | None, dict[str, Given]], named: Given | None,
                settings: dict[str, Given]) -> tuple[Given | None, dict[str, Given]]:
    old_named, old = current
    old_name = old_named.value if old_named is not None else DEFAULT_PARTS[stage]
    takes = part_settings(stage, named.value if named is not None else old_name)
    # a switch given off to a part without it says nothing: the part has it off
    settings = {k: g for k, g in settings.items() if g.value is not False or k in takes}
    wrong = next((k for k in settings if k not in takes), None)
    if named is not None:
        if wrong is not None:
            raise _not_taken(stage, wrong, settings[wrong].label, named.value, named.label)
        kept = dict(old) if named.value == old_name else {k: g for k, g in old.items() if k in takes}
        return named, {**kept, **settings}
    if wrong is None:
        return old_named, {**old, **settings}
    taking, first = takers(stage, settings), next(iter(settings.values()))
    if len(taking) == 1:
        return _merge_part(stage, current, Given(taking[0], first.label, first.rank), settings)
    raise _not_taken(stage, wrong, settings[wrong].label, old_name, old_named.label if old_named is not None else None)


def _not_taken(stage: str, setting: str, label: str, part: str, part_label: str | None) -> ConfigError:
    taking = takers(stage, (setting,))
    which = f"{stage} {' or '.join(taking)}" if taking else "no registered part"
    current = f"{part} ({part_label})" if part_label else f"{part} (the default)" if part == DEFAULT_PARTS.get(stage) \
        else part
    hint = f"; name one ({' or '.join(taking)})" if len(taking) > 1 else ""
    return ConfigError(f"{label}: applies to {which}, not to {stage} {current}{hint}", (setting,))


def _merge_filters(out: Merged, given: dict[str, Given], src: Source, rank: int) -> None:
    table = options()
    listed = given.get(FILTER_LIST)
    if listed is not None:
        if not listed.value:
            out.filters = {}
        for name, settings in listed.value:
            labels = src.filter_labels.get(name, {})
            out.filters[name] = (Given(name, listed.label, rank),
                                 {k: Given(v, labels.get(k, listed.label), rank) for k, v in settings.items()})
    flat = {k: g for k, g in given.items() if table[k].group == "filter"}
    if not flat:
        return
    taking, (k, first) = takers("filter", flat), next(iter(flat.items()))
    if len(taking) != 1:
        raise ConfigError(f"{first.label}: applies to no one token filter", (k,))
    named, settings = out.filters.get(taking[0], (Given(taking[0], first.label, rank), {}))
    out.filters[taking[0]] = (named, {**settings, **flat})


def _requirements(out: Merged) -> None:
    """Rule 4 of the module's docstring, from the declarations: what a setting implies (a
    ``baseline`` rescales), then what it requires (``cache_size`` a ``cache``)."""
    simple, table = out.simple, options()
    for name, g in list(simple.items()):  # every option of ``simple`` is a setting's
        for other, value in table[name].setting.decl.implies.items():
            held = simple.get(other)
            if held is None or held.rank < g.rank:
                simple[other] = Given(value, g.label, g.rank)
            elif held.value != value and held.rank == g.rank:
                raise ConfigError(f"{g.label}: implies {out.naming.name(other)}; it cannot go with {held.label}",
                                  (name,))
            elif held.value != value:
                del simple[name]  # switched off above it: it goes
    for name, g in list(simple.items()):
        if g.value is None or g.value == table[name].setting.default:
            continue
        for other, allowed in table[name].setting.decl.requires.items():
            holder, default = simple.get(other), table[other].setting.default
            value = holder.value if holder is not None else default
            if allows(allowed, value, default):
                continue
            if holder is not None and holder.rank > g.rank:
                del simple[name]  # the requirement was changed above it: it goes too
                break
            reason = RequirementError(name, other, allowed, value, table[other].metavar or "VALUE")
            raise ConfigError(f"{g.label}: {reason.named(out.naming.name)}", (name,))


# -- building -----------------------------------------------------------------------------------
class Compiled(NamedTuple):
    """A compiled run.

    Attributes
    ----------
    spec : the run.
    provenance : how each of its options was given.

    Examples
    --------
    >>> spec, provenance = run_compiled({"layer": 4})
    >>> provenance.name("layer"), provenance.name("n_gram")
    ('layer=', 'n_gram=')
    """

    spec: RunSpec
    provenance: Provenance


def compile_run(sources: Sequence[Source], data: Mapping[str, Any] | None = None) -> RunSpec:
    """The :class:`RunSpec` of ``sources`` (lowest first; see the module's docstring), with
    ``data`` supplied where the chosen parts take it.

    Parameters
    ----------
    sources : the sources, lowest first; each one's :attr:`~Source.base` (a preset or run file
        it names) comes just before it.
    data : settings the data provide (a language pair's idf-L corpus).

    Returns
    -------
    RunSpec
        (:func:`compile_labelled` gives the :class:`Provenance` of its options beside it.)

    Examples
    --------
    >>> low, high = make_source({"aligner": "wmd", "n_gram": 2}, "file", str), make_source({"aligner": "sinkhorn"},
    ...                                                                                     "keywords", str)
    >>> compile_run([low, high]).composition.aligner.n_gram  # wmd -> sinkhorn keeps what both take
    2
    """
    return compile_labelled(sources, data).spec


def compile_labelled(sources: Sequence[Source], data: Mapping[str, Any] | None = None) -> Compiled:
    """:func:`compile_run`, with the :class:`Provenance` of the options beside the spec.

    Parameters
    ----------
    sources, data : as :func:`compile_run`'s.

    Returns
    -------
    Compiled

    Examples
    --------
    >>> compile_labelled(sources_of({"preset": "moverscore-v2"})).provenance.labels["aligner"]
    'preset moverscore-v2: aligner'
    """
    merged = merge(sources)
    for name, value in (data or {}).items():  # what the data provide, where the part chosen takes it
        stage = options()[name].group
        settings = merged.parts[stage][1]
        if name not in settings and name in part_settings(stage, merged.part(stage)):
            settings[name] = Given(value, "(data)", -1)  # never selects a part
    return construct(merged)


def construct(merged: Merged) -> Compiled:
    """Build and check every part of a merged run; errors name the options as written."""
    table, provenance = options(), merged.provenance()
    values = {k: g.value for k, g in merged.simple.items()}

    def group(name: str) -> dict[str, Any]:
        return {k: v for k, v in values.items() if table[k].group == name}

    def made(make: Callable[[], Any], part: str | None = None) -> Any:
        try:
            return make()
        except ConfigError as exc:
            raise provenance.relabel(exc, part) from None
        except TypeError as exc:  # a part from outside the package that takes its settings differently
            raise ConfigError(f"{part or 'a part'}: {str(exc).strip().splitlines()[0]}") from None

    parts = {}
    for stage, registry in STAGES.items():
        named, settings = merged.parts[stage]
        parts[stage] = made(lambda: registry.get(merged.part(stage))(**{k: g.value for k, g in settings.items()}),
                            named.label if named is not None else None)
    filters = tuple(made(lambda n=name, s=settings: FILTERS.get(n)(**{k: g.value for k, g in s.items()}), named.label)
                    for name, (named, settings) in merged.filters.items())
    own = made(lambda: CompositionOptions(**group("composition")))
    composition = made(lambda: own.compose(parts, filters))
    # what running says (out of memory: a smaller batch) names the options as this source names them
    runtime = made(lambda: Runtime(**group("runtime"), _naming=provenance.naming.name))
    cache = made(lambda: CacheSpec(**group(OPTION.cache.group))) if OPTION.cache.name in values else None
    encoder = made(lambda: EncoderSpec(**group("encoder")))
    # the pairings, then the model's existence: the last check (RunSpec's own)
    return Compiled(made(lambda: RunSpec(encoder, composition, runtime, cache)), provenance)


__all__ = ["Compiled", "Given", "Merged", "Provenance", "Source", "compile_labelled", "compile_run", "construct",
           "make_source", "merge", "preset_source", "run_compiled", "run_spec", "sources_of"]
