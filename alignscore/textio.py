"""Text in and out: reading files of one text per line (errors name the file and line), the
candidate/reference files as pairs, the score outputs (TSV, JSONL), and writing outputs so that
no input and no good earlier output is ever lost; TOML files (run files, grids, spaces) read with
the line of every key, and TOML text written.

The rules every command follows for an output (``-o``), all of them here:

- ``-`` (or no ``-o`` where a command allows it) is standard output (:func:`is_stdout`);
  a command that writes a folder of files refuses it (:func:`check_output_folder`).
- An output file goes into a folder that exists: no folder is created for it, and a missing
  one is an error naming it (:func:`require_folder`). A command that writes a folder of files
  creates that folder itself, once every check has passed (:func:`make_output_folder`); the
  folder above it must exist.
- Every check comes before any work (:func:`check_output`): not an input, not a folder, not
  read-only, not something other than a regular file, a pipe or a character device, and its
  folder accepts a new file. Nothing is created by the checks.
- The output is written to a temporary file next to it and renamed onto it when complete
  (:func:`replacing`, :func:`write_output`, :func:`output_stream`); a folder of files is written
  as one set, renamed into place once every file is complete (:func:`write_output_set`).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import stat
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence, TextIO

import torch

from .errors import ConfigError, InputError


class ScoreTable(Protocol):
    """What the writers read of :class:`~alignscore.scores.Scores` (kept structural so that
    text I/O does not depend on the scoring modules)."""

    signature: object  # formatted by str()
    metrics: Mapping[str, torch.Tensor]
    best_reference: torch.Tensor

    def __len__(self) -> int: ...

    def means(self) -> dict[str, float]: ...


def iter_lines(path: str | Path) -> Iterator[str]:
    """The lines of a UTF-8 file, lazily, one text per line.

    Lines are split on ``\\n`` only (a ``\\r`` before it is dropped), so Unicode line separators
    inside a text never shift the alignment between files. A final newline does not start an
    extra, empty text; empty lines elsewhere are empty texts. A leading UTF-8 BOM is ignored.

    Raises:
        InputError: the file cannot be read, or is not valid UTF-8 (the message names the line).
    """
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", str(path)) from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
                if not raw:
                    return  # a file that is only a byte-order mark holds no text
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start} "
                                 f"of the line)", str(path), number) from None


def check_readable(paths: Iterable[str | Path | None]) -> None:
    """Raise the error reading would (:func:`iter_lines`) for the first of ``paths`` that cannot
    be opened or whose first line is not UTF-8, without reading them whole: before a model loads."""
    for path in paths:
        if path is not None:
            next(iter_lines(path), None)


def read_lines(path: str | Path) -> list[str]:
    """Every line of a UTF-8 file (:func:`iter_lines`)."""
    return list(iter_lines(path))


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
def check_inputs(cands_path: str | Path, refs_paths: Sequence[str | Path]) -> int:
    """The number of candidates, after reading every file once, before any output is written:
    each must be valid UTF-8 (an error names the file and line), the candidate file must not be
    empty and each reference file must have one line per candidate."""
    n = sum(1 for _ in iter_lines(cands_path))
    check_parallel(cands_path, n, [(p, sum(1 for _ in iter_lines(p))) for p in refs_paths])
    return n


def iter_pairs(cands_path: str | Path, refs_paths: Sequence[str | Path]) -> Iterator[tuple[str, list[str]]]:
    """``(candidate, [reference per reference file])``, lazily; the files must have the same
    number of lines (:func:`check_inputs`)."""
    refs = [iter_lines(p) for p in refs_paths]
    for cand in iter_lines(cands_path):
        yield cand, [next(r) for r in refs]


def read_aligned(cands_path: str | Path, refs_paths: Sequence[str | Path]) -> tuple[list[str], list[list[str]]]:
    """Candidates and, per candidate, its references (one per reference file); there must be
    candidates, and the files must have the same number of lines."""
    cands = read_lines(cands_path)
    ref_files = [read_lines(p) for p in refs_paths]
    check_parallel(cands_path, len(cands), [(p, len(refs)) for p, refs in zip(refs_paths, ref_files)])
    return cands, [list(group) for group in zip(*ref_files)]


def read_tsv(path: str | Path, sources: bool = False) -> tuple[list[str], list[list[str]]]:
    """Candidates and their references from a TSV file, any number of references per candidate:
    each line is ``candidate<TAB>reference<TAB>reference...`` (texts cannot hold tabs). An empty
    candidate is an empty text, as an empty line of a candidate file; an empty reference field
    (two tabs in a row, a tab at the end) is an error, as is a line without a tab. ``sources``:
    each line is ``candidate<TAB>source``, one source (a candidate is scored against its source).

    Raises:
        InputError: naming the file and line.
    """
    cands, groups = [], []
    for number, line in enumerate(iter_lines(path), start=1):
        cand, *refs = line.split("\t")
        if not refs:
            raise InputError(f"has no tab: each line is a candidate, then its {'source' if sources else 'references'}, "
                             "separated by tabs", str(path), number)
        if sources and len(refs) > 1:
            raise InputError(f"has {len(refs)} fields after the candidate: with sources each line is "
                             "candidate<TAB>source, one source", str(path), number)
        if "" in refs:
            raise InputError("the source is empty (a tab at the end)" if sources else
                             f"reference {refs.index('') + 1} is empty (two tabs in a row, or a tab at the end)",
                             str(path), number)
        cands.append(cand)
        groups.append(refs)
    if not cands:
        raise InputError("is empty: there is nothing to score", str(path))
    return cands, groups


STDOUT = "-"


def is_stdout(path: str | Path | None) -> bool:
    """Whether the output ``path`` is standard output: none given, or ``-``."""
    return path is None or str(path) == STDOUT


def require_folder(path: str | Path) -> None:
    """The folder an output ``path`` goes into must exist: no output creates the folders above it.

    Raises:
        InputError: naming the missing folder, or the file that stands where a folder should be.
    """
    parent = Path(path).parent
    if parent.is_dir():
        return
    blocking = next((p for p in (parent, *parent.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise InputError(f"cannot write the output here: {blocking} is a file, not a folder", str(path))
    raise InputError(f"cannot write the output here: the folder {parent} does not exist (create it first: "
                     "alignscore does not create the folders an output goes into)", str(path))


def check_output(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Refuse, before any work, an output that would destroy an input or cannot be written.

    ``path`` must not be (the same file as: symbolic or hard links count) any of ``inputs``,
    nor a folder, nor a read-only file; its folder must exist (:func:`require_folder`) and
    accept a new file (tried by creating and removing one). A named pipe or a character device
    (``/dev/null``, ``/dev/stdout``) is written straight into (see :func:`replacing`); any other
    file that is not a regular one (a socket, a block device) is refused. Standard output
    (:func:`is_stdout`) passes: it is written straight into. Nothing is created.

    Raises:
        InputError: the output cannot be written there, or would overwrite an input.
    """
    if is_stdout(path):
        return Path(STDOUT)
    path = Path(path)
    for source in inputs:
        if source is not None and path.exists() and Path(source).exists() and os.path.samefile(path, source):
            raise InputError(f"is also an input ({source}): the output would overwrite it; write elsewhere",
                             str(path))
    if path.is_dir():
        raise InputError("is a folder, not a file", str(path))
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError("is read-only: cannot write the output", str(path))
    if is_stream(path):
        return path
    if path.exists() and not path.is_file():
        raise InputError("is neither a regular file nor a pipe or character device: cannot write the output "
                         "there", str(path))
    require_folder(path)
    try:
        os.unlink(_temporary(path))
    except OSError as exc:
        raise InputError(f"cannot write the output here: {exc.strerror or exc}", str(path)) from None
    return path


def check_output_folder(folder: str | Path, names: Iterable[str], inputs: Iterable[str | Path | None] = ()) -> Path:
    """Refuse, before any work, an output folder that cannot take the files ``names``.

    ``-`` is refused (standard output is one stream, not a folder of files), as is a file. A
    folder that exists must accept each file (:func:`check_output`, none of them an input); one
    that does not is made later by :func:`make_output_folder`: the folder above it must exist
    and accept a new folder (tried by making and removing one). Nothing is created.

    Raises:
        InputError: naming the folder, or the file of it that cannot be written.
    """
    if str(folder) == STDOUT:
        raise InputError("-o -: this command writes a folder of files, not one stream to standard output; "
                         "give a folder")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError("is a file, not a folder: give a folder for the outputs", str(folder))
    if folder.is_dir():
        for name in names:
            check_output(folder / name, inputs)
        return folder
    require_folder(folder)
    probe = folder.parent / f".{folder.name}.{secrets.token_hex(4)}.tmp"
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as exc:
        raise InputError(f"cannot write the output here: {exc.strerror or exc}", str(folder)) from None
    return folder


def make_output_folder(folder: str | Path) -> Path:
    """The output folder, made if it is not there (the folder above it must exist: only the
    output folder itself is created, after every check has passed)."""
    folder = Path(folder)
    require_folder(folder)
    folder.mkdir(exist_ok=True)
    return folder


def is_stream(path: str | Path) -> bool:
    """Whether ``path`` is a named pipe or a character device (a terminal, ``/dev/null``): an
    output written straight into, never replaced, truncated or resumed."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


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
    """Where to write the output ``path``, so that a failed or interrupted run never replaces (or
    truncates) a good earlier output: a temporary file next to it, renamed onto it when the
    block ends normally and removed when it raises. A symbolic link is written through, as
    ``open(path, "w")`` would. A file that is replaced keeps its permissions; one that has other
    hard links is written through when the output is complete (its other names keep seeing it).
    A named pipe or a character device is not replaced: the block writes straight into it."""
    if is_stream(path):
        yield Path(path)
        return
    path = Path(path).resolve()
    tmp = _temporary(path)  # the folder must exist (require_folder): no output creates one
    try:
        yield tmp
        if path.is_file():
            st = path.stat()
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if st.st_nlink > 1:
                with open(tmp, "rb") as src, open(path, "r+b") as dst:
                    shutil.copyfileobj(src, dst)
                    dst.truncate()
                return
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_output_set(folder: str | Path, writers: Mapping[str, Callable[[Path], None]],
                     names: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The files of a command's output folder, written as one set.

    The folder is made if it is not there (:func:`make_output_folder`); each file is written
    into a temporary file beside it (:func:`replacing`), and only once every file is written are
    they renamed into place: a failed or interrupted run leaves the earlier set whole, never a
    mix of new and old files.

    Parameters
    ----------
    folder : str or Path
        The output folder (checked before any work: :func:`check_output_folder`).
    writers : mapping of str to callable
        What writes each file, given the path to write, by key.
    names : mapping of str to str, optional
        The file written for each key (only those: a writer without a name here is not
        called); default: every key of ``writers`` is its file's name.

    Returns
    -------
    dict of str to Path
        Each file's path, by key.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = write_output_set(Path(tmp) / "out", {"table": lambda p: p.write_text("a")}, {"table": "a.md"})
    ...     paths["table"].name, paths["table"].read_text()
    ('a.md', 'a')
    """
    folder = make_output_folder(folder)
    paths = {key: folder / name for key, name in (names or {k: k for k in writers}).items()}
    with ExitStack() as stack:
        temporaries = {key: stack.enter_context(replacing(path)) for key, path in paths.items()}
        for key, tmp in temporaries.items():
            writers[key](tmp)
    return paths


def write_output(path: str | Path | None, text: str) -> None:
    """``text`` as the output ``path``: standard output when :func:`is_stdout`, else written
    whole through :func:`replacing` (UTF-8)."""
    with output_stream(path) as fh:
        fh.write(text)


@contextmanager
def output_stream(path: str | Path | None, newline: str | None = None) -> Iterator[TextIO]:
    """A text stream onto the output ``path``: standard output when :func:`is_stdout` (left
    open), else a new UTF-8 file renamed onto ``path`` when the block ends normally
    (:func:`replacing`)."""
    if is_stdout(path):
        yield sys.stdout
        return
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", newline=newline) as fh:  # type: ignore[arg-type]
        yield fh


# -- score outputs ------------------------------------------------------------------------------------
PENDING = "# mean pending"


def tsv_header(signature: object, columns: Sequence[str], means: dict[str, float] | None) -> list[str]:
    """The three header lines of a TSV output: signature, means (or ``# mean pending`` while a
    streamed run is going), column names."""
    mean_line = PENDING if means is None else "# mean " + " ".join(f"{k}={v:.6f}" for k, v in means.items())
    return [f"# {signature}\n", mean_line + "\n", "\t".join(columns) + "\n"]


def rows(scores: ScoreTable, fmt: str, multi: bool) -> list[str]:
    """The output lines of ``scores`` (as ``alignscore score`` writes them)."""
    names = list(scores.metrics)
    columns = {k: v.tolist() for k, v in scores.metrics.items()}
    best = scores.best_reference.tolist()
    out = []
    for i in range(len(scores)):
        if fmt == "jsonl":
            row = {k: columns[k][i] for k in names}
            if multi:
                row["best_ref"] = best[i]
            out.append(json.dumps(row) + "\n")
        else:
            cells = [repr(columns[k][i]) for k in names] + ([str(best[i])] if multi else [])
            out.append("\t".join(cells) + "\n")
    return out


def write_scores(scores: ScoreTable, out: TextIO, fmt: str, multi: bool, comments: Sequence[str] = ()) -> None:
    """TSV: the signature and means as comment lines (then ``comments``, each a ``# ...`` line),
    the column names, one row per candidate; JSONL: one object per candidate."""
    names = list(scores.metrics) + (["best_ref"] if multi else [])
    if fmt == "tsv":
        header = tsv_header(scores.signature, names, scores.means())
        out.writelines(header[:2] + list(comments) + header[2:])
    out.writelines(rows(scores, fmt, multi))


# -- TOML files (run files, grids, spaces, combinations) ------------------------------------------
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


def toml_text(data: Mapping[str, Any], comment: str | None = None) -> str:
    """``data`` as TOML (``comment`` lines first, each as ``# ...``); tuples are written as lists
    (inf and -inf are TOML's own), and a NaN is refused."""
    import tomli_w

    head = "".join(f"# {line}\n".replace("# \n", "#\n") for line in (comment or "").splitlines())
    return head + tomli_w.dumps(_plain(dict(data)))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        raise ConfigError("a NaN setting cannot be written")
    return value
