"""The options of a run: one table, read from the settings the parts declare.

Every setting of the encoder (:class:`~alignscore.encoders.spec.EncoderSpec`), of every
registered part (aggregators, token filters, weightings, aligners; a part registered from
outside the package included), of the runtime and of the cache is one option, named by its
field. That name is the Python keyword, the TOML key of a run file, the key of a grid cell and
of a search space; the command-line flag is made from it by one rule (``--`` + the name, ``_``
as ``-``: ``n_gram`` is ``--n-gram``). A few options belong to the run itself: the part of
each stage by name (``aggregator``, ``weighting``, ``aligner``, ``filters``), the composition's
own settings (``special_tokens``, ``metric``, ``multi_ref``, ``rescale``, ``baseline``), two
shorthands (``lang`` names BERTScore's model for a language, ``idf`` is ``weighting =
"idf-S"``) and the two sources a run may start from (``preset``, ``config``).

The same setting name in several parts of one stage is one option (``reg`` is sinkhorn's and
baryscore's); a name may not mean settings of two stages (checked when the table is made).
Older names stay readable where a field declares them as ``aliases``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any, Callable

from ..aggregators import AGGREGATORS
from ..aligners import ALIGNERS
from ..cache import CacheSpec
from ..encoders.layers import LANG_FALLBACK, LANG_MODELS, model_for_lang
from ..encoders.spec import EncoderSpec
from ..errors import ConfigError
from ..composition import Composition, CompositionOptions
from ..filters import FILTERS
from ..registry import Registry
from ..runtime import Runtime
from ..settings import Setting, settings_of
from ..weighting import WEIGHTINGS
from .presets import PRESETS

#: the stages whose part is chosen by name, and their registries
STAGES: dict[str, Registry[Any]] = {"aggregator": AGGREGATORS, "weighting": WEIGHTINGS, "aligner": ALIGNERS}
#: the part of each stage where none is named: the composition's own default
DEFAULT_PARTS = {f.name: STAGES[f.name].name_of(f.default_factory()) for f in fields(Composition) if f.name in STAGES}
#: the options that name a whole run to start from: a preset, a run file
SOURCE_OPTIONS = ("preset", "config")
#: the options that pick the model (``lang`` picks BERTScore's for a language)
MODEL_OPTIONS = ("model", "lang")
#: the option that lists the token filters (a list of parts, not one part of a stage)
FILTER_LIST = "filters"
#: the stages that exist only for an encoder with layers: a static table takes none of their options
LAYERED = ("aggregator",)


@dataclass(frozen=True)
class Option:
    """One option.

    ``group`` is what it sets: ``"source"`` (a run to start from), ``"encoder"``, ``"runtime"``,
    ``"cache"``, ``"composition"`` (a part by name or a setting of the composition itself), or a
    stage (``"aligner"``, ...; ``"filter"``) whose parts named in ``parts`` take it. ``setting``
    is the field's declaration where it is one (the first part's, for a setting several parts
    share). ``layered``: it applies to an encoder with layers only; ``means``: a shorthand's
    option and how its value reads as that option's (``idf`` is a ``weighting``)."""

    name: str
    group: str
    help: str
    setting: Setting | None = None
    parts: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None
    boolean: bool = False
    multiple: bool = False
    file: bool = False
    metavar: str | None = None
    layered: bool = False
    means: tuple[str, Callable[[Any], Any]] | None = None

    @property
    def flag(self) -> str:
        """The command-line flag: ``--`` + the name, ``_`` as ``-``."""
        return "--" + self.name.replace("_", "-")


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _setting_option(s: Setting, group: str, part: str | None, defaults: str | None = None) -> Option:
    d = s.decl
    help_text = d.help or f"{group} setting {s.name}"
    if defaults is not None:
        help_text += f" (defaults: {defaults})"
    elif s.default not in (None, "", ()) and not s.boolean and "default" not in help_text:
        help_text += f" (default: {_shown(s.default)})"
    choices = tuple(c for c in (d.choices or ()) if isinstance(c, str)) or None
    exclusive = choices is not None and s.kinds <= {str}
    return Option(s.name, group, help_text, s, (part,) if part else (), choices if exclusive else None,
                  boolean=s.boolean, file=d.file, metavar=d.metavar, layered=d.layered or group in LAYERED)


def _same_kind(stage: str, takers: list[tuple[str, Setting]]) -> None:
    """Refuse a setting that several parts of a stage share but declare as different values: one
    flag, one key and one check serve them all (a part's own range may differ)."""
    (first, a), *others = takers
    for part, b in others:
        if a.kinds != b.kinds or a.decl.choices != b.decl.choices:
            raise ConfigError(f"{stage} {part}'s setting {b.name!r} ({b.describe()}) differs from {stage} {first}'s "
                              f"({a.describe()}): a name shared by parts takes one type and one set of choices "
                              "(rename the setting)")


@lru_cache(maxsize=1)
def _table(*_parts: int) -> dict[str, Option]:
    out: dict[str, Option] = {}

    def add(option: Option) -> None:
        same = out.get(option.name)
        if same is None:
            out[option.name] = option
        elif same.group == option.group and option.group in STAGES or option.group == "filter" == same.group:
            out[option.name] = replace(same, parts=same.parts + option.parts)  # one setting of several parts
        else:
            raise ConfigError(f"the setting {option.name!r} of {option.group} {', '.join(option.parts)} is also "
                              f"a {same.group} option: a part's setting needs a name of its own (rename it)")

    add(Option(SOURCE_OPTIONS[0], "source", "A named run (its model and composition); the options below override it.",
               choices=tuple(PRESETS.names())))
    add(Option(SOURCE_OPTIONS[1], "source", "A run file (TOML: the keys are these options' names; `alignscore config` "
               "and `alignscore tune` write one); the options below override it. Not with --preset.", file=True,
               metavar="FILE"))
    add(Option("lang", "encoder", "The model BERTScore picks for texts in this language (bert_score's table: en "
               f"{LANG_MODELS['en']}, zh {LANG_MODELS['zh']}, any other {LANG_FALLBACK}); instead of --model.",
               metavar="CODE", means=(MODEL_OPTIONS[0], model_for_lang)))
    for s in settings_of(EncoderSpec):
        add(_setting_option(s, "encoder", None))
    for stage, registry in STAGES.items():
        add(Option(stage, "composition", f"The {stage} by name: {', '.join(registry.names())}.",
                   choices=tuple(registry.names()), layered=stage in LAYERED))
    add(Option("idf", "composition", "--idf is --weighting idf-S (bert_score's --idf); --no-idf is --weighting none.",
               boolean=True, means=("weighting", lambda on: "idf-S" if on else "none")))
    add(Option(FILTER_LIST, "composition", "Token filters on ordinary tokens, added to those of the preset or file "
               "(repeat, or a comma list; 'none': no filter): rm (punctuation and non-first subwords), ms2-punct "
               "(moverscore_v2's string test). Stop words: --stopwords FILE.", multiple=True, metavar="NAMES"))
    for s in settings_of(CompositionOptions):
        add(_setting_option(s, "composition", None))
    for stage, registry in (*STAGES.items(), ("filter", FILTERS)):
        shared: dict[str, list[tuple[str, Setting]]] = {}
        for name in registry.names():
            for s in settings_of(registry.get(name)):
                if s.decl.option:
                    shared.setdefault(s.name, []).append((name, s))
        for setting_name, takers in shared.items():
            _same_kind(stage, takers)
            defaults = {_shown(s.default) for _, s in takers}
            shown = ", ".join(f"{part} {_shown(s.default)}" for part, s in takers) if len(defaults) > 1 else None
            helped = next((s for _, s in takers if s.decl.help), takers[0][1])
            for part, s in takers:
                add(_setting_option(helped if s is takers[0][1] else s, stage, part, shown))
    for group, cls in (("runtime", Runtime), ("cache", CacheSpec)):
        for s in settings_of(cls):
            if s.decl.option:
                add(_setting_option(s, group, None))
    return out


def options() -> dict[str, Option]:
    """Every option by name, in help order (the parts registered now, outside ones included).

    Returns
    -------
    dict of str to Option
        Made from the declarations; a part from outside that declares a setting a registered
        part shares under another type or other choices is refused here (ConfigError).

    Examples
    --------
    >>> table = options()
    >>> table["n_gram"].flag, table["n_gram"].parts, table["layer"].layered
    ('--n-gram', ('sinkhorn', 'wmd'), True)
    """
    return _table(*(id(r.get(n)) for r in (*STAGES.values(), FILTERS) for n in r.names()))


class _Named:
    """Each option's entry as an attribute (``OPTION.n_gram.flag == "--n-gram"``): code outside the
    declarations names an option through it, so a name that no declaration has fails where it
    is written instead of matching nothing."""

    def __getattr__(self, name: str) -> Option:
        table = options()
        if name not in table:
            raise AttributeError(f"no option {name!r}")
        return table[name]


OPTION = _Named()


def aliases() -> dict[str, str]:
    """Older names that files and keywords may still use, each to its option (an alias that an
    option's own name or another alias already takes is left out: it stays valid inside its
    part's table, :func:`part_aliases`)."""
    table = options()
    out: dict[str, str] = {}
    taken: set[str] = set(table)
    for option in table.values():
        for alias in (option.setting.decl.aliases if option.setting else ()):
            if alias in taken:
                out.pop(alias, None)
                continue
            out[alias] = option.name
            taken.add(alias)
    return out


def part_settings(stage: str, name: str) -> dict[str, Setting]:
    """The settings of the part ``name`` of ``stage`` (``"filter"`` for token filters), by name."""
    return {s.name: s for s in settings_of(registry_of(stage).get(name)) if s.decl.option}


def part_aliases(stage: str, name: str) -> dict[str, str]:
    """``{alias: setting}`` of one part (valid in its table: ``aligner = {name = "sinkhorn",
    dtype = "float32"}``)."""
    return {a: s.name for s in part_settings(stage, name).values() for a in s.decl.aliases}


def takers(stage: str, names: Any) -> list[str]:
    """The parts of ``stage`` (``"filter"`` for token filters) that take every setting ``names``d."""
    return [n for n in registry_of(stage).names() if all(k in part_settings(stage, n) for k in names)]


def registry_of(stage: str) -> Registry[Any]:
    return FILTERS if stage == "filter" else STAGES[stage]


__all__ = ["DEFAULT_PARTS", "FILTER_LIST", "LAYERED", "MODEL_OPTIONS", "OPTION", "Option", "SOURCE_OPTIONS", "STAGES",
           "aliases", "options", "part_aliases", "part_settings", "registry_of", "takers"]
