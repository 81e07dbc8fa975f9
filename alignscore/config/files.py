"""How a key of a file (a run file, a grid, a space, read by :func:`~alignscore.textio.load_toml`
with the line of every key) is named in errors: ``file:line: key``. The keys are the options'
names; a part may be given as a table of its name and settings (``aligner = { name = "wmd", n_gram = 2 }``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping


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


__all__ = ["dotted", "key_label", "line_of"]
