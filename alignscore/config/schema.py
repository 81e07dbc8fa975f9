"""The options of a run: one table, read from the settings the parts declare.

The encoder's, every registered part's, the composition's own, the runtime's and the cache's
settings, each named by its field: the Python keyword, the TOML key, the grid and space key; the
flag is ``--`` + the name with ``_`` as ``-``. A few options are the run's own (the part of each
stage by name, ``filters``, the shorthands ``lang`` and ``idf``, the sources ``preset`` and
``config``). A setting several parts of one stage share is one option; a name may not mean
settings of two stages.
"""

from __future__ import annotations

from collections import Counter
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
    """One option of the table :func:`options` makes.

    Attributes
    ----------
    name : the keyword and TOML key (the flag is :attr:`flag`).
    group : what it sets: ``"source"`` (a run to start from), ``"encoder"``, ``"runtime"``,
        ``"cache"``, ``"composition"`` (a part by name or a setting of the composition itself), or a
        stage (``"aligner"``, ...; ``"filter"``) whose parts named in ``parts`` take it.
    help : the ``--help`` text.
    setting : the field's declaration where it is one (the first part's, for a shared setting).
    parts : the parts of its stage that take it.
    choices : the texts it takes, where it takes only those.
    boolean, multiple, file : a switch; repeatable; names a file.
    metavar : the placeholder in ``--help``.
    layered : it applies to an encoder with layers only.
    means : a shorthand's option and how its value reads as that option's (``idf`` is a ``weighting``).

    Examples
    --------
    >>> options()["idf"].means[0], options()["idf"].means[1](True)
    ('weighting', 'idf-S')
    """

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
        """The command-line flag: ``--`` + the name (or the flag name its setting declares), ``_`` as ``-``."""
        return "--" + (self.setting and self.setting.decl.flag or self.name).replace("_", "-")


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def setting_option(s: Setting, group: str, parts: tuple[str, ...] = (), defaults: str | None = None) -> Option:
    d = s.decl
    help_text = d.help or f"{group} setting {s.name}"
    if defaults is not None:
        help_text += f" (defaults: {defaults})"
    elif s.default not in (None, "", ()) and not s.boolean and "default" not in help_text:
        help_text += f" (default: {_shown(s.default)})"
    choices = tuple(c for c in (d.choices or ()) if isinstance(c, str)) if s.kinds <= {str} else ()
    return Option(s.name, group, help_text, s, parts, choices or None,
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


def _helped(stage: str, takers: list[tuple[str, Setting]]) -> Setting:
    """The setting whose help a shared option shows: the first built-in part's that has one, and
    each other meaning after it, named by its parts (a plugin's setting does not hide a built-in's)."""
    package = __package__.split(".")[0] + "."
    takers = sorted(takers, key=lambda taker: not registry_of(stage).get(taker[0]).__module__.startswith(package))
    meanings: dict[str, list[str]] = {}
    for part, s in takers:
        if s.decl.help:
            meanings.setdefault(s.decl.help, []).append(part)
    first = next((s for _, s in takers if s.decl.help), takers[0][1])
    if len(meanings) < 2:
        return first
    more = "; ".join(f"for {stage} {', '.join(parts)}: {text}" for text, parts in list(meanings.items())[1:])
    return replace(first, decl=replace(first.decl, help=f"{first.decl.help.rstrip()} ({more})"))


def _admit() -> None:
    """A part registered once this table exists must fit in it (each registry calls this)."""
    _table(*_part_ids(loaded=False))


def _part_ids(loaded: bool = True) -> tuple[int, ...]:
    registries = (*STAGES.values(), FILTERS)
    return tuple(id(r.get(n)) for r in registries for n in (r.names() if loaded else r.registered()))


@lru_cache(maxsize=1)
def _table(*_parts: int) -> dict[str, Option]:
    out: dict[str, Option] = {}

    def add(option: Option) -> None:
        if option.name in out:
            raise ConfigError(f"the setting {option.name!r} of {option.group} {', '.join(option.parts[:1])} is also a "
                              f"{out[option.name].group} option: a part's setting needs a name of its own (rename it)")
        out[option.name] = option

    def own(group: str, cls: Any) -> None:  # the settings of the encoder, the composition, the runtime, the cache
        for s in settings_of(cls):
            if s.decl.option:
                add(setting_option(s, group))

    add(Option(SOURCE_OPTIONS[0], "source", "A named run (its model and composition); the options below override it.",
               choices=tuple(PRESETS.names())))
    add(Option(SOURCE_OPTIONS[1], "source", "A run file (TOML: the keys are these options' names; `alignscore config` "
               "and `alignscore tune` write one), or a preset's name; the options below override it. Not with "
               "--preset.", file=True, metavar="FILE"))
    add(Option("lang", "encoder", "The model BERTScore picks for texts in this language (bert_score's table: en "
               f"{LANG_MODELS['en']}, zh {LANG_MODELS['zh']}, any other {LANG_FALLBACK}); instead of --model.",
               metavar="CODE", means=(MODEL_OPTIONS[0], model_for_lang)))
    own("encoder", EncoderSpec)
    for stage, registry in STAGES.items():
        add(Option(stage, "composition", f"The {stage} by name: {', '.join(registry.registered())}.",
                   choices=tuple(registry.registered()), layered=stage in LAYERED))
    add(Option("idf", "composition", "--idf is --weighting idf-S (bert_score's --idf); --no-idf is --weighting none.",
               boolean=True, means=("weighting", lambda on: "idf-S" if on else "none")))
    add(Option(FILTER_LIST, "composition", "Token filters on ordinary tokens, added to those of the preset or file "
               "(repeat, or a comma list; 'none': no filter): rm (punctuation and non-first subwords), ms2-punct "
               "(moverscore_v2's string test). Stop words: --stopwords FILE.", multiple=True, metavar="NAMES"))
    own("composition", CompositionOptions)
    for stage, registry in (*STAGES.items(), ("filter", FILTERS)):
        shared: dict[str, list[tuple[str, Setting]]] = {}
        for name in registry.registered():
            for s in part_settings(stage, name).values():
                shared.setdefault(s.name, []).append((name, s))
        for takers in shared.values():  # a setting several parts of a stage share is one option
            _same_kind(stage, takers)
            defaults = {_shown(s.default) for _, s in takers}
            shown = ", ".join(f"{part} {_shown(s.default)}" for part, s in takers) if len(defaults) > 1 else None
            add(setting_option(_helped(stage, takers), stage, tuple(part for part, _ in takers), shown))
    own("runtime", Runtime)
    own("cache", CacheSpec)
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
    return _table(*_part_ids())


for _registry in (*STAGES.values(), FILTERS):  # from now on a part is checked as it registers
    _registry.admit = _admit


class _Named:
    """Each option's entry as an attribute (``OPTION.n_gram.flag``): an undeclared name fails where it is written."""

    def __getattr__(self, name: str) -> Option:
        table = options()
        if name not in table:
            raise AttributeError(f"no option {name!r}")
        return table[name]


OPTION = _Named()


def aliases() -> dict[str, str]:
    """Older names that files and keywords may still use, each to its option (one that another name
    takes too is valid inside its part's table only: ``aligner = {name = "sinkhorn", dtype = "float32"}``)."""
    table = options()
    pairs = [(alias, o.name) for o in table.values() if o.setting for alias in o.setting.decl.aliases]
    taken = Counter(alias for alias, _ in pairs)
    return {alias: name for alias, name in pairs if alias not in table and taken[alias] == 1}


def part_settings(stage: str, name: str) -> dict[str, Setting]:
    """The settings of the part ``name`` of ``stage`` (``"filter"`` for token filters), by name."""
    return {s.name: s for s in settings_of(registry_of(stage).get(name)) if s.decl.option}


def takers(stage: str, names: Any) -> list[str]:
    """The parts of ``stage`` (``"filter"`` for token filters) that take every setting ``names``d."""
    return [n for n in registry_of(stage).names() if all(k in part_settings(stage, n) for k in names)]


def registry_of(stage: str) -> Registry[Any]:
    return FILTERS if stage == "filter" else STAGES[stage]


__all__ = ["DEFAULT_PARTS", "FILTER_LIST", "LAYERED", "MODEL_OPTIONS", "OPTION", "Option", "SOURCE_OPTIONS", "STAGES",
           "aliases", "options", "part_settings", "registry_of", "setting_option", "takers"]
