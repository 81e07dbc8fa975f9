"""Reading text files of one text per line, with errors that name the file and line."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError


def read_lines(path: str | Path) -> list[str]:
    """Return the lines of a UTF-8 file, one text per line.

    Lines are split on ``\\n`` only (a ``\\r`` before it is dropped), so Unicode line separators
    inside a text never shift the alignment between files. A final newline does not start an
    extra, empty text; empty lines elsewhere are empty texts. A leading UTF-8 BOM is ignored.

    Raises:
        InputError: the file cannot be read, or is not valid UTF-8 (the message names the line).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", str(path), line
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
