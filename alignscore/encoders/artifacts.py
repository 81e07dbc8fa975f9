"""The artifact store: what is derived from a model's files and kept between runs, in one folder.

Only the speed options the user names write one. The onnx backend (``--backend onnx``) keeps its
exported graphs in ``export_dir`` (default ``$ALIGNSCORE_EXPORT_DIR``, else
``~/.cache/alignscore/exports``), and the embedding cache (``--cache DIR``) keeps in its own folder
the memo of model-file digests that its key needs. A default run (the torch backend, no cache)
creates no folder and writes nothing.

- :meth:`ArtifactStore.path`: where the artifact of one model fingerprint and layer set goes (so
  another model, even one saved into the same directory, never reuses it);
- :meth:`ArtifactStore.write`: writes it atomically (a reader never sees half a file, two
  processes writing at once leave one whole file) and records its SHA-256 beside it;
  :meth:`ArtifactStore.verified` says whether a file is one this store wrote: a damaged file, or
  another one put in its place, is not, whatever it would load as;
- :meth:`ArtifactStore.digests`: the memo of file digests (``digests.json``; see
  :mod:`alignscore.encoders.fingerprint`), so that a large checkpoint is hashed once.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .fingerprint import file_digest, identity_path

DIGESTS = "digests.json"
CHECKSUM = ".sha256"


def default_export_dir() -> Path:
    """``$ALIGNSCORE_EXPORT_DIR``, else ``$XDG_CACHE_HOME/alignscore/exports`` (``~/.cache/...``)."""
    env = os.environ.get("ALIGNSCORE_EXPORT_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "alignscore" / "exports"


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass(frozen=True)
class ArtifactStore:
    """Files derived from models, under ``directory`` (created when the first one is written)."""

    directory: Path

    def path(self, fingerprint: str, layers: Sequence[int], suffix: str) -> Path:
        """``<directory>/<fingerprint>-L<layers><suffix>``."""
        return Path(self.directory) / f"{fingerprint[:40]}-L{'.'.join(map(str, layers))}{suffix}"

    def write(self, path: Path, write: Callable[[str], None]) -> None:
        """``write(tmp)``, then the file and its checksum moved into place (the checksum first:
        a file without a matching checksum is never trusted)."""
        def checked(tmp: str) -> None:
            write(tmp)
            digest = file_digest(Path(tmp))
            write_atomically(_checksum_path(path), lambda t: Path(t).write_text(digest, encoding="ascii"))

        write_atomically(path, checked)

    def verified(self, path: Path) -> bool:
        """Whether ``path`` is a file this store wrote, unchanged since."""
        try:
            want = _checksum_path(path).read_text(encoding="ascii").strip()
            with self.digests() as memo:
                return path.is_file() and file_digest(path, memo) == want
        except OSError:
            return False

    @contextlib.contextmanager
    def digests(self) -> Iterator[dict[str, str]]:
        """The digest memo read from ``digests.json`` (empty when missing or damaged), written back
        when the block added to it, without the entries of files that no longer exist. An
        unwritable folder only costs hashing again next time."""
        path = Path(self.directory) / DIGESTS
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            memo = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, str)}
        except (OSError, ValueError, AttributeError):
            memo = {}
        before = dict(memo)
        yield memo
        if memo == before:
            return
        kept = {ident: digest for ident, digest in memo.items() if os.path.exists(identity_path(ident))}
        try:
            text = json.dumps(kept, sort_keys=True)
            write_atomically(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        except OSError:
            pass


def _checksum_path(path: Path) -> Path:
    return path.with_name(path.name + CHECKSUM)


__all__ = ["ArtifactStore", "default_export_dir", "write_atomically"]
