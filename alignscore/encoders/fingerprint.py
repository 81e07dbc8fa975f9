"""Model fingerprints: a digest of the files a model is loaded from.

The embedding cache is keyed by it, so that a different model in
the same directory (another checkpoint copied over it, a fine-tuned model saved in its place)
never reuses what the old one computed. Every top-level file of the model directory takes part
(config, tokenizer files, weights), hashed in full with SHA-256; a read-me or ``.gitattributes``
does not. Hashing a large checkpoint takes a second or two, so a file's digest is remembered under
its path, inode, size, modification and change times, within the process and in a ``memo``: any
write to the file, or another file put at the same path, changes one of them and makes it hash
again. The cache keeps that memo in a JSON file in its folder (:func:`digest_memo`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Iterator, MutableMapping

# Files that never change what a model computes.
_IGNORED_SUFFIXES = (".md", ".txt.lock", ".lock")
_IGNORED_NAMES = {".gitattributes", "README", "LICENSE"}
_BLOCK = 1 << 20


def model_directory(source: str, revision: str | None = None) -> Path | None:
    """The local directory a model is loaded from: ``source`` itself when it is a directory,
    else the hub cache's snapshot of ``source`` at ``revision`` (found offline); ``None`` when
    neither exists (the model was never downloaded)."""
    path = Path(source)
    if path.is_dir():
        return path.resolve()
    try:
        from huggingface_hub import try_to_load_from_cache  # what transformers looks in, offline

        config = try_to_load_from_cache(source, "config.json", revision=revision)
    except Exception:  # noqa: BLE001 - any failure to resolve means "not available offline"
        return None
    return Path(config).resolve().parent if isinstance(config, str) else None


def file_digest(path: Path, memo: MutableMapping[str, str] | None = None) -> str:
    """SHA-256 of a file's bytes, remembered in ``memo`` under the file's identity
    ``path|inode|size|mtime_ns|ctime_ns`` (so a changed or replaced file is hashed again)."""
    ident = _identity(path)
    if memo is not None and ident in memo:
        return memo[ident]
    digest = _hashed(ident)
    if memo is not None:
        memo[ident] = digest
    return digest


@lru_cache(maxsize=1024)
def _hashed(ident: str) -> str:
    """SHA-256 of the file of an :func:`_identity`, hashed once per process while the identity
    holds (a write or another file at the path makes another identity)."""
    h = hashlib.sha256()
    with open(_identity_path(ident), "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def _identity(path: Path) -> str:
    """``path|inode|size|mtime_ns|ctime_ns``: what a digest is remembered under."""
    st = path.stat()
    return f"{path}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


def _identity_path(ident: str) -> str:
    """The path of an :func:`_identity`."""
    return ident.rsplit("|", 4)[0]


def directory_fingerprint(directory: Path, memo: MutableMapping[str, str] | None = None) -> str:
    """SHA-256 over ``(name, file digest)`` of every top-level file of a model directory,
    sorted by name (symbolic links, as in the hub cache, are followed)."""
    h = hashlib.sha256()
    for entry in sorted(directory.iterdir(), key=lambda p: p.name):
        name = entry.name
        if name in _IGNORED_NAMES or name.endswith(_IGNORED_SUFFIXES) or not entry.is_file():
            continue
        h.update(name.encode("utf-8") + b"\0" + file_digest(entry.resolve(), memo).encode("ascii") + b"\0")
    return h.hexdigest()


def hub_fingerprint(source: str, revision: str | None = None) -> str:
    """What a hub id that is not in the local cache gets: a digest of ``name@revision``, which is
    only as safe as the revision is pinned (a commit hash is)."""
    return hashlib.sha256(f"hub:{source}@{revision or 'main'}".encode("utf-8")).hexdigest()


@contextlib.contextmanager
def digest_memo(path: Path) -> Iterator[dict[str, str]]:
    """A digest memo read from the JSON file ``path`` (empty when missing or damaged) and written
    back, atomically, when the block added to it, without the entries of files that no longer
    exist. An unwritable folder only costs hashing again next time."""
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
        memo = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, str)}
    except (OSError, ValueError, AttributeError):
        memo = {}
    before = dict(memo)
    yield memo
    if memo == before:
        return
    kept = {ident: digest for ident, digest in memo.items() if os.path.exists(_identity_path(ident))}
    try:
        fd, tmp = tempfile.mkstemp(prefix=".digests.", suffix=".tmp", dir=Path(path).parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(kept, fh, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        if "tmp" in locals() and os.path.exists(tmp):
            os.unlink(tmp)


__all__ = ["digest_memo", "directory_fingerprint", "file_digest", "hub_fingerprint", "model_directory"]
