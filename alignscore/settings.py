"""How a part, an encoder or the runtime describes one of its settings to every way in.

A setting is a dataclass field; :func:`setting` gives it the metadata the option table
(:mod:`alignscore.options`) reads to make its command-line flag, its help and the parser of
its values (the same for a flag's text and for a Python value)::

    @dataclass(frozen=True)
    class MyAligner(Aligner):
        threshold: float = setting(0.5, help="similarity above which two tokens match")

A field without this metadata still gets a flag (``--threshold``), parsed by its type hint.
"""

from __future__ import annotations

import math
import os
from dataclasses import field
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError

# metadata keys
HELP, FLAG, PARSE, CHOICES, OPTION = "help", "flag", "parse", "choices", "option"


def setting(default: Any, *, help: str = "", flag: str | None = None, parse: Callable[[Any], Any] | None = None,
            choices: tuple[str, ...] | None = None, option: bool = True) -> Any:
    """A dataclass field with a default and what the option table needs: ``help``; ``flag`` (the
    command-line name, default ``--<field-name>``); ``parse`` (a value as given, text or Python,
    to the field's value; default: by the type hint); ``choices``; ``option=False``: no flag (a
    setting only files and Python give, such as a list of sentences)."""
    meta = {HELP: help, FLAG: flag, PARSE: parse, CHOICES: choices, OPTION: option}
    return field(default=default, metadata=meta)


def int_list(value: Any, what: str = "") -> tuple[int, ...]:
    """``"8,9,10"``, ``"8-12"``, ``"-5,-4,-3,-2,-1"`` or a list of integers -> a tuple."""
    named = f"{what} " if what else ""
    if not isinstance(value, str):
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, bool) or not isinstance(v, int) for v in items):
            raise ConfigError(f"{named}expected whole numbers, not {value!r}")
        return tuple(items)
    out: list[int] = []
    for part in value.split(","):
        part = part.strip()
        try:
            if part.count("-") == 1 and not part.startswith("-"):
                lo, hi = (int(x) for x in part.split("-"))
                if lo > hi:
                    raise ConfigError(f"{named}{value!r}: the range {part} is empty (write ranges low-high)")
                out += range(lo, hi + 1)
            else:
                out.append(int(part))
        except ValueError:
            raise ConfigError(f"cannot read {named}{value!r}") from None
    return tuple(out)


def float_list(value: Any, what: str = "") -> tuple[float, ...]:
    """``"-inf,1,inf"`` or a list of numbers -> a tuple of floats."""
    named = f"{what} " if what else ""
    if not isinstance(value, str):
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in items):
            raise ConfigError(f"{named}expected numbers, not {value!r}")
        return tuple(float(v) for v in items)
    try:
        return tuple(math.inf if p in ("inf", "+inf") else -math.inf if p == "-inf" else float(p)
                     for p in (s.strip() for s in value.split(",")))
    except ValueError:
        raise ConfigError(f"cannot read {named}{value!r}") from None


def file_or_texts(value: Any) -> Any:
    """A file named by an option as an absolute path (a spec holds no relative names), or
    sentences given in place (a list) as a tuple."""
    if isinstance(value, (str, os.PathLike)):
        return str(Path(value).resolve())
    return tuple(value) if isinstance(value, list) else value


__all__ = ["CHOICES", "FLAG", "HELP", "OPTION", "PARSE", "file_or_texts", "float_list", "int_list", "setting"]
