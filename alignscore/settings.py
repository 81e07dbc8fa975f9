"""How a part, an encoder or the runtime declares its settings: each setting is a dataclass field
(:func:`setting`) whose metadata says its help, range or choices, requirements, aliases and whether
it names a file. :func:`check_settings` enforces them where the object is built
(``__post_init__``); the configuration layer reads the same declarations (DESIGN.md,
"Configuration"). A field whose name starts with ``_`` is private (not a setting)::

    @dataclass(frozen=True)
    class MyAligner(Aligner):
        threshold: float = setting(0.5, gt=0, le=1, help="similarity above which two tokens match")

        def __post_init__(self) -> None:
            check_settings(self)
"""

from __future__ import annotations

import math
import os
import re
import sys
import typing
from contextlib import suppress
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from functools import lru_cache
from numbers import Integral, Real
from types import UnionType
from typing import Any, Callable, Mapping, Sequence

from .errors import ConfigError

KEY = "alignscore"  # the metadata key of a setting's declaration


class _Given:
    """``requires={"cache": GIVEN}``: the other setting must be set (not None, not its default)."""

    def __repr__(self) -> str:
        return "GIVEN"


GIVEN: Any = _Given()


def allows(allowed: tuple[Any, ...], value: Any, default: Any) -> bool:
    """Whether ``value`` (of a setting whose default is ``default``) meets a requirement."""
    return value in allowed or (GIVEN in allowed and value is not None and value != default)


class SettingError(ConfigError):
    """A setting's value is wrong: ``field`` names it, ``reason`` says why (the message is
    ``"<field>: <reason>"``; the configuration layer puts the option as the user wrote it in
    place of the field's name)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}", (field,))
        self.field, self.reason = field, reason


class RequirementError(SettingError):
    """A setting given where another setting of the same object does not allow it:
    ``field`` applies with ``other`` set to one of ``allowed`` only."""

    def __init__(self, field: str, other: str, allowed: tuple[Any, ...], actual: Any, metavar: str = "VALUE") -> None:
        self.other, self.allowed, self.actual, self.metavar = other, allowed, actual, metavar
        super().__init__(field, self.named(lambda o: f"{o} ="))

    def named(self, name: Callable[[str], str]) -> str:
        """The reason with the other setting named by ``name`` (as the user would write it)."""
        if GIVEN in self.allowed:
            return f"applies with {name(self.other)} {self.metavar} only"
        return f"applies with {name(self.other)} {' or '.join(map(str, self.allowed))} only (it is {self.actual})"


@dataclass(frozen=True)
class Declaration:
    """What a setting declares (see :func:`setting`)."""

    help: str = ""
    choices: tuple[Any, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    infinite: bool = False
    requires: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    implies: Mapping[str, Any] = field(default_factory=dict)
    layered: bool = False
    aliases: tuple[str, ...] = ()
    option: bool = True
    file: bool = False
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    short: str | None = None
    flag: str | None = None
    envvar: str | None = None
    unset: str | None = None
    names_model: bool = False
    bert_score: tuple[str, ...] = ()


def setting(default: Any, *, compare: bool = True, **declared: Any) -> Any:
    """A dataclass field that is a setting.

    Parameters
    ----------
    default : the value when none is given.
    help : one sentence for ``--help`` and the docs.
    choices : the values a text setting may take (for ``int | str`` settings: the texts).
    ge, gt, le : the range of a number (each number of a list), inclusive or strict.
    infinite : ``inf`` and ``-inf`` are allowed (a float is finite otherwise; NaN never is).
    requires : ``{other field: allowed value(s)}`` of the same object, when this one is given
        (not ``None`` and not its default): ``window_stride`` requires ``long_texts = "window"``;
        :data:`GIVEN` as the allowed value: the other must be given (``cache_size`` a ``cache``).
    implies : ``{other setting: value}`` that giving this one sets, unless a higher source
        says otherwise (``baseline`` implies ``rescale = true``); the compiler enforces it.
    layered : it applies to an encoder with layers (a transformer) only, never to a static table.
    aliases : other names of this setting that files and keywords accept (older names).
    option : ``False``: files and keywords may give it, but it has no command-line flag.
    file : the value names a file (or, for list settings, may be given inline); the
        configuration layer resolves it against the folder of the file that names it.
    parse : how a text value is read, where the type alone does not say (``"4G"``).
    metavar : the placeholder in ``--help``.
    short : the flag's one-letter form (``-m``: bert-score's).
    flag : the flag's name where it is not the field's (fit's ``start`` is ``from``).
    envvar : the environment variable the flag reads when it is not given.
    unset : what ``None`` means, said in a written run's comment (``"the model's own limit"``).
    compare : whether the setting takes part in equality (a large inline list need not).
    names_model : the value names a model: a hub id, or a local folder or file (resolved against
        the folder of the file that names it where it exists there).
    bert_score : bert_score's keywords (and flags) that do what this setting does: refused with
        this setting's name (a user's habit named, not translated by hand).

    The keywords but ``default`` and ``compare`` are :class:`Declaration`'s fields.
    """
    declared["requires"] = {k: v if isinstance(v, tuple) else (v,) for k, v in (declared.get("requires") or {}).items()}
    return field(default=default, metadata={KEY: Declaration(**declared)}, compare=compare)


def hints(cls: Any) -> dict[str, Any]:
    """The type hints of a dataclass, each resolved on its own: one that names a type imported
    only for type checking is read as "any value" without losing the others."""
    with suppress(Exception):
        return typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for owner in reversed(getattr(cls, "__mro__", [cls])):
        namespace = vars(sys.modules.get(owner.__module__, typing))
        for name, hint in getattr(owner, "__annotations__", {}).items():
            try:
                out[name] = eval(hint, namespace) if isinstance(hint, str) else hint  # noqa: S307 - our own source
            except Exception:  # noqa: BLE001
                out[name] = Any
    return out


@dataclass(frozen=True)
class Setting:
    """One setting of a class: its ``name``, type ``hint``, ``default`` and declaration."""

    name: str
    hint: Any
    default: Any
    decl: Declaration

    @property
    def kinds(self) -> set[Any]:
        """The types the hint admits (``None`` aside)."""
        if typing.get_origin(self.hint) in (typing.Union, UnionType):
            return set(typing.get_args(self.hint)) - {type(None)}
        return {self.hint}

    @property
    def boolean(self) -> bool:
        return self.kinds == {bool}

    @property
    def sequence(self) -> Any:
        """The item type of a ``tuple[X, ...]`` setting, else None."""
        return next((typing.get_args(kind)[0] for kind in self.kinds if typing.get_origin(kind) is tuple), None)

    def read(self, value: Any, text: bool = False, check: bool = True) -> Any:
        """``value`` as this setting holds it: a text read (``text``: from the command line; else
        where the setting is a list or declares how it reads text), then checked (``check``:
        :meth:`check`). Raises :class:`SettingError`."""
        if isinstance(value, str) and (text or self.sequence is not None and str not in self.kinds
                                       or self.decl.parse is not None):
            value = self._parse(value)
        return self.check(value) if check else value

    def _parse(self, text: str) -> Any:
        kinds, item, parse = self.kinds, self.sequence, self.decl.parse
        if self.decl.file or kinds == {str}:
            return text  # a path is resolved against the folder of what names it
        try:
            if item is not None:
                return float_list(text) if item is float else int_list(text) if item is int else (text,)
            if parse is not None:
                return parse(text)
        except ConfigError as exc:
            raise SettingError(self.name, exc.message) from None
        except ValueError:
            raise SettingError(self.name, f"cannot read {text!r} ({self.describe()})") from None
        if int in kinds and re.fullmatch(r"\s*[+-]?\d+\s*", text):  # "+-5" is no integer: int() would raise
            return int(text)
        if float in kinds:
            with suppress(ValueError):  # a text setting may be a number too: else the text
                return float(text)
        if str in kinds:
            return text
        raise SettingError(self.name, f"cannot read {text!r} ({self.describe()})")

    def check(self, value: Any) -> Any:
        """``value`` as this setting holds it (an int as a float for a float setting, a list as
        a tuple), after checking its type, range and choices. Raises :class:`SettingError`."""
        if value is None:
            union = typing.get_origin(self.hint) in (typing.Union, UnionType)
            if union and type(None) in typing.get_args(self.hint) or self.default is None:
                return None
            raise SettingError(self.name, f"a value is needed ({self.describe()})")
        kinds, item = self.kinds, self.sequence
        if Any in kinds:
            return value
        scalars = {k for k in kinds if typing.get_origin(k) is not tuple}
        if item is not None and isinstance(value, (list, tuple)):
            if not value:
                raise SettingError(self.name, f"needs at least one value ({self.describe()})")
            return tuple(self._scalar(v, {item}) for v in value)
        return self._scalar(value, scalars)  # no scalar kinds: refused there

    def _scalar(self, value: Any, kinds: set[Any]) -> Any:
        d = self.decl
        if bool in kinds and isinstance(value, bool):
            return value
        if isinstance(value, bool):
            raise SettingError(self.name, f"expected {self.describe()}, not {value!r}")
        number = int if int in kinds and isinstance(value, Integral) else float if float in kinds and isinstance(
            value, Real) else None
        if number is not None:
            value = number(value)
            if (number is float and (math.isnan(value) or math.isinf(value) and not d.infinite)
                    or d.ge is not None and not value >= d.ge or d.gt is not None and not value > d.gt
                    or d.le is not None and not value <= d.le):
                raise SettingError(self.name, f"expected {self.describe()}, not {value!r}")
            return value
        if str in kinds and isinstance(value, str):
            if d.choices is not None and value not in d.choices:  # where numbers are taken too, say so
                raise SettingError(self.name, f"expected {self.describe()}, not {value!r}" if kinds - {str, Any}
                                   else f"one of {', '.join(map(str, d.choices))}, not {value!r}")
            return value
        if os.PathLike in kinds and isinstance(value, os.PathLike):
            return os.fspath(value)
        if any(isinstance(k, type) and k not in (int, float, str, bool) and isinstance(value, k) for k in kinds):
            return value
        raise SettingError(self.name, f"expected {self.describe()}, not {value!r}")

    def describe(self) -> str:
        """The values it takes, in words (``"an integer >= 1"``, ``"one of truncate, window"``)."""
        d, words, item = self.decl, [], self.sequence
        kinds = {item} if item is not None else self.kinds
        if bool in kinds:
            words.append("true or false")
        number = "an integer" if int in kinds else "a number" if float in kinds else None
        if number:
            bounds = " and ".join(f"{op} {_num(x)}" for op, x in ((">=", d.ge), (">", d.gt), ("<=", d.le))
                                  if x is not None)
            words.append(f"{number} {bounds}".strip() + (", inf or -inf" if d.infinite else ""))
        if str in kinds:
            words.append(f"one of {', '.join(map(str, d.choices))}" if d.choices else
                         "a file name" if d.file and item is None else "a text")
        text = " or ".join(words) or "a value"
        if item is None:
            return text
        return "a list of " + text.replace("an integer", "integers").replace("a number", "numbers").replace(
            "a text", "texts")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


@lru_cache(maxsize=None)
def settings_of(cls: Any) -> tuple[Setting, ...]:
    """The settings of a part class, an encoder spec or the runtime: its init fields whose names
    do not start with ``_``, in order. Read once per class: a search compiles thousands of runs
    over a few classes, and resolving type hints compiles each annotation anew."""
    if not is_dataclass(cls):
        return ()
    return tuple(Setting(f.name, found.get(f.name, Any), f.default if f.default is not MISSING else
                         f.default_factory() if f.default_factory is not MISSING else None,  # type: ignore[misc]
                         f.metadata.get(KEY) or Declaration())
                 for found in (hints(cls),) for f in fields(cls) if f.init and not f.name.startswith("_"))


def check_settings(obj: Any) -> None:
    """Check and normalise every setting of a frozen dataclass instance in place: its type,
    range and choices (:meth:`Setting.check`), then what each setting given requires of the
    others. Raises :class:`SettingError` naming the field."""
    table = settings_of(type(obj))
    for s in table:
        object.__setattr__(obj, s.name, s.check(getattr(obj, s.name)))
    for s in [s for s in table if getattr(obj, s.name) not in (None, s.default)]:  # those given
        for other, allowed in s.decl.requires.items():
            held = next(o for o in table if o.name == other)
            if not allows(allowed, getattr(obj, other), held.default):
                raise RequirementError(s.name, other, allowed, getattr(obj, other), held.decl.metavar or "VALUE")


def keyword(name: str) -> str:
    """The option ``name`` as Python names it (``batch_size=``): how an option the caller did not
    give is named where no label says otherwise."""
    return f"{name}="


@dataclass(frozen=True)
class Options:
    """The base of a command's own options (fit's, tune's): a frozen dataclass of settings, each
    error naming the option as the caller gave it (``_labels``: the flag from the command line;
    by default the keyword ``name=``).

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class Run(Options):
    ...     steps: int = setting(200, ge=1, help="the most steps")
    >>> Run.given({"steps": "0"}, {"steps": "--steps"}, text=True)
    Traceback (most recent call last):
    alignscore.errors.ConfigError: --steps: expected an integer >= 1, not 0
    >>> Run.given({"step": 3})
    Traceback (most recent call last):
    alignscore.errors.ConfigError: step=: no such option (the options: steps)
    """

    _labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False, kw_only=True)

    def __post_init__(self) -> None:
        try:
            check_settings(self)
        except SettingError as exc:
            raise self.relabel(exc) from None

    def label(self, name: str) -> str:
        """The option ``name`` as the caller names it."""
        return self._labels.get(name) or keyword(name)

    def relabel(self, exc: SettingError) -> ConfigError:
        """``exc`` with its option named as the caller gave it."""
        reason = exc.named(self.label) if isinstance(exc, RequirementError) else exc.reason
        return ConfigError(f"{self.label(exc.field)}: {reason}", (exc.field,))

    @classmethod
    def names(cls) -> list[str]:
        """Its options' names."""
        return [s.name for s in settings_of(cls)]

    @classmethod
    def given(cls, values: Mapping[str, Any], labels: Mapping[str, str] | None = None, text: bool = False) -> Any:
        """The options ``values`` give (``None``: not given), each read (``text``: as typed on the
        command line) and checked once, by its declaration."""
        own, table = Options(_labels=dict(labels or {})), {s.name: s for s in settings_of(cls)}
        unknown = [k for k in values if k not in table]
        if unknown:
            raise ConfigError(f"{own.label(unknown[0])}: no such option (the options: {', '.join(table)})")
        try:
            read = {k: table[k].read(v, text, check=False) for k, v in values.items() if v is not None}
            needed = [f.name for f in fields(cls) if f.default is f.default_factory is MISSING and f.name not in read]
            if needed:
                raise SettingError(needed[0], f"a value is needed ({table[needed[0]].describe()})")
        except SettingError as exc:
            raise own.relabel(exc) from None
        return cls(**read, _labels=own._labels)


def int_list(value: str) -> tuple[int, ...]:
    """``"8,9,10"``, ``"8-12"``, ``"-5,-4,-3,-2,-1"`` -> a tuple."""
    out: list[int] = []
    for part in value.split(","):
        part = part.strip()
        try:
            if part.count("-") == 1 and not part.startswith("-"):
                lo, hi = (int(x) for x in part.split("-"))
                if lo > hi:
                    raise ConfigError(f"{value!r}: the range {part} is empty (write ranges low-high)")
                out += range(lo, hi + 1)
            else:
                out.append(int(part))
        except ValueError:
            raise ConfigError(f"cannot read {value!r} as whole numbers") from None
    return tuple(out)


def float_list(value: str) -> tuple[float, ...]:
    """``"-inf,1,inf"`` -> a tuple of floats."""
    try:
        return tuple(math.inf if p in ("inf", "+inf") else -math.inf if p == "-inf" else float(p)
                     for p in (s.strip() for s in value.split(",")))
    except ValueError:
        raise ConfigError(f"cannot read {value!r} as numbers") from None


def comma_list(values: Sequence[str]) -> list[str] | None:
    """The names of a repeatable option whose values may also be comma-separated, in order,
    without empty ones; None when there is none (the command's default applies).

    Example:
        >>> comma_list(("cs-en, de-en", "fi-en")), comma_list(())
        (['cs-en', 'de-en', 'fi-en'], None)
    """
    out = [v.strip() for text in values for v in text.split(",") if v.strip()]
    return out or None


__all__ = ["Declaration", "GIVEN", "Options", "RequirementError", "Setting", "SettingError", "allows", "check_settings",
           "comma_list", "float_list", "hints", "int_list", "keyword", "setting", "settings_of"]
