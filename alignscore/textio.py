"""Reading text files of one text per line, with errors that name the file and line; writing
outputs so that no input and no good earlier output is ever lost."""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

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


def check_parallel(cands_path: str | Path, n_cands: int, refs: Iterable[tuple[str | Path, int]]) -> None:
    """A candidate file with ``n_cands`` lines and reference files of ``(path, lines)`` make
    pairs: there is at least one candidate and every reference file has one line per candidate.

    Raises:
        InputError: the candidate file is empty, or a reference file has another line count.
    """
    if n_cands == 0:
        raise InputError("is empty: there is nothing to score", str(cands_path))
    for path, n in refs:
        if n != n_cands:
            raise InputError(f"{path} has {n} lines but {cands_path} has {n_cands}: "
                             "every candidate needs exactly one line in each reference file")


# -- outputs: never destroy an input or a good earlier output ---------------------------------
def check_output(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Refuse, before any work, an output that would destroy an input or cannot be written.

    ``path`` must not be (the same file as: symbolic or hard links count) any of ``inputs``,
    nor a folder, nor a read-only file; its folder is created if needed and must accept a new
    file (tried by creating and removing one).

    Raises:
        InputError: the output cannot be written there, or would overwrite an input.
    """
    path = Path(path)
    for source in inputs:
        if source is not None and path.exists() and Path(source).exists() and os.path.samefile(path, source):
            raise InputError(f"is also an input ({source}): the output would overwrite it; write elsewhere",
                             str(path))
    if path.is_dir():
        raise InputError("is a folder, not a file", str(path))
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError("is read-only: cannot write the output", str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.unlink(_temporary(path))
    except OSError as exc:
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocking} is a file, not a folder" if blocking else exc.strerror or str(exc)
        raise InputError(f"cannot write the output here: {why}", str(path)) from None
    return path


def _temporary(path: Path) -> Path:
    """A new, empty file next to ``path`` (same folder, so a rename onto ``path`` is atomic),
    created with the permissions an ordinary new file gets."""
    while True:
        # the suffix is kept: a writer may take the format from it
        tmp = path.parent / f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary file next to ``path`` to write the output into: renamed onto ``path`` when
    the block ends normally, removed when it raises, so a failed or interrupted run never
    replaces (or truncates) a good earlier output. A symbolic link is written through, as
    ``open(path, "w")`` would."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
