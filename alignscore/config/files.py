"""Run files (TOML): read with the line of every key, and a whole run written back.

A bad value is named ``file:line: key``. The keys are the options' names; a part may be given as
a table of its name and settings (``aligner = { name = "wmd", n_gram = 2 }``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import InputError

_KEY = re.compile(r'\s*((?:"[^"]*"|[\w-]+)(?:\s*\.\s*(?:"[^"]*"|[\w-]+))*)\s*=')
_INNER = re.compile(r'[{,]\s*((?:"[^"]*"|[\w-]+))\s*=')


def load_toml(path: str | Path) -> tuple[dict[str, Any], dict[tuple[Any, ...], int]]:
    """A TOML file's tables and the line of each key (:func:`key_lines`), with errors that
    name the file."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", str(path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", str(path)) from None
    try:
        return tomllib.loads(text), key_lines(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", str(path)) from None


def key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """The line (1-based) where each key of a TOML text is first set, by its path: ``("layer",)``,
    ``("aligner", "n_gram")`` (an inline or ``[aligner]`` table), ``("rows", 2, "layer")`` (the third ``[[rows]]``)."""
    out: dict[tuple[Any, ...], int] = {}
    table: tuple[Any, ...] = ()
    counts: dict[tuple[Any, ...], int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            array = stripped.startswith("[[")  # the n-th table of an array is its path and n
            table = _dotted(stripped[1 + array:stripped.find("]" * (1 + array))])
            if array:
                counts[table] = counts.get(table, -1) + 1
                table += (counts[table],)
            out.setdefault(table, n)
        elif (m := _KEY.match(line)) is not None:
            path = table + _dotted(m.group(1))
            out.setdefault(path, n)
            for inner in _INNER.finditer(line, m.end()):
                out.setdefault(path + _dotted(inner.group(1)), n)
    return out


def _dotted(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"') for part in re.findall(r'"[^"]*"|[^.]+', text.strip()))


def line_of(lines: Mapping[tuple[Any, ...], int], path: tuple[Any, ...]) -> int | None:
    """The line of ``path``, or of the nearest table that holds it."""
    return next((lines[path[:end]] for end in range(len(path), 0, -1) if path[:end] in lines), None)


def dotted(path: tuple[Any, ...]) -> str:
    """``("rows", 2, "layer")`` -> ``rows[2].layer``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def key_label(path: str, lines: Mapping[tuple[Any, ...], int]) -> Callable[[tuple[Any, ...]], str]:
    """How a key path of the file ``path`` is named in errors: ``table9.toml:31: rows[3].layer``."""
    def label(p: tuple[Any, ...]) -> str:
        line = line_of(lines, p)
        return f"{path}:{line}: {dotted(p)}" if line else f"{path}: {dotted(p)}"
    return label


def toml_text(data: Mapping[str, Any], comment: str | None = None) -> str:
    """``data`` as TOML (``comment`` lines first, each as ``# ...``)."""
    import tomli_w

    head = "".join(f"# {line}\n".replace("# \n", "#\n") for line in (comment or "").splitlines())
    return head + tomli_w.dumps(dict(data))


__all__ = ["dotted", "key_label", "key_lines", "line_of", "load_toml", "toml_text"]
