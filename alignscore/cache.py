"""A persistent, size-bounded cache of encoder hidden states, shared safely between processes.

Re-scoring the same texts (another aggregation, weighting or aligner, a grid of compositions, a
second run) then skips the encoder. An entry is one layer's hidden states ``[T, D]`` of one
text, keyed by ``sha256(model fingerprint | layer | token ids)``:

- the model fingerprint digests every file of the model directory, the dtype and the long-text
  mode (:meth:`~alignscore.encoders.base.Encoder.fingerprint`), so another model, even one saved
  into the same directory, or another dtype never reads these states;
- the token ids are what the text becomes under that model's tokenizer (truncation included),
  so the same text always finds its entry and nothing else does;
- a layer set reads one entry per layer, so compositions over overlapping layers share entries.

Storage is one SQLite database in write-ahead-log mode: readers never block, writers queue
(for at most ``timeout_s``, a few seconds), and a transaction either lands whole or not at all,
so processes may read and write the same cache concurrently. The payload is bounded by
``max_bytes``: when an insertion goes over it, the least recently used entries are evicted down
to 90% of the bound and their pages returned to the file system (recency is kept in a small
table of its own, so a hit rewrites no stored states). Values are stored bit for bit (float32
stays float32), so a hit gives exactly the states that were computed; only finite states are
stored.

Every row carries a CRC-32 of its bytes, and a row is used only when its checksum, its size
(rows x columns x item size) and its dtype agree: a row damaged on disk, or written into the
database by something else, is a miss (one warning says how many), and its text is encoded
again. Reads go through SQLite's own file reads (no memory map), so a file cut short behind
SQLite's back is an I/O error, not a crash.

A cache that cannot be used (a damaged file, a folder that cannot be written, a lock held
longer than ``timeout_s`` by another process) never stops a run: one warning names the file and
says why, and the run goes on without the cache (it only costs time: states are computed). The
cache's folder also holds the memo of model-file digests its keys need (``digests.json``, see
:func:`~alignscore.encoders.fingerprint.digest_memo`).
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import time
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

import numpy as np
import torch

from .errors import ConfigError
from .settings import GIVEN, SettingError, check_settings, setting

DB_NAME = "states-v3.sqlite"
DIGESTS = "digests.json"  # the memo of model-file digests, beside the database
DTYPES = ("<f4", "<f2", "<f8")  # what :meth:`EmbeddingCache.put` stores (float32, float16, float64)
ENV_VAR = "ALIGNSCORE_CACHE"
DEFAULT_MAX_BYTES = 4 << 30
_SCHEMA = """
CREATE TABLE IF NOT EXISTS states (
    key BLOB PRIMARY KEY, rows INTEGER NOT NULL, cols INTEGER NOT NULL, dtype TEXT NOT NULL,
    data BLOB NOT NULL, nbytes INTEGER NOT NULL, crc INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS used (key BLOB PRIMARY KEY, atime INTEGER NOT NULL, nbytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS used_atime ON used (atime);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('bytes', 0);
"""
_CHUNK = 500  # keys per SQL statement (SQLite's bound on host parameters is 32766)
T = TypeVar("T")


def state_key(fingerprint: str, layer: int, ids: Sequence[int] | torch.Tensor) -> bytes:
    """``sha256(fingerprint | layer | ids as int64)``: the key of one layer of one text."""
    ids = torch.as_tensor(ids, dtype=torch.int64)
    return state_keys(fingerprint, [layer], ids[None], [len(ids)])[0][0]


def state_keys(fingerprint: str, layers: Sequence[int], ids: torch.Tensor, lengths: Sequence[int]) -> list[list[bytes]]:
    """:func:`state_key` of every ``layer`` of every row ``b`` of a right-padded ``ids [B, T]``
    (its first ``lengths[b]`` ids): the rows' bytes are read once and the hash of each layer's
    prefix is copied, not recomputed."""
    rows = ids.cpu().numpy().astype("<i8", copy=False)
    prefixes = [hashlib.sha256(f"{fingerprint}|{layer}|".encode("utf-8")) for layer in layers]
    keys = []
    for b, n in enumerate(lengths):
        data = rows[b, :n].tobytes()
        row = []
        for prefix in prefixes:
            h = prefix.copy()
            h.update(data)
            row.append(h.digest())
        keys.append(row)
    return keys


@dataclass(frozen=True)
class CacheStats:
    entries: int
    bytes: int


@dataclass(eq=False)
class EmbeddingCache:
    """Hidden states on disk under ``directory`` (created if needed).

    Args:
        directory: where the database lives; several processes may share it.
        max_bytes: bound on the stored states' bytes (least recently used are evicted).
        timeout_s: how long a writer waits for another process's transaction before this run
            goes on without the cache.
    """

    directory: str | Path
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_s: float = 5.0
    _conn: sqlite3.Connection | None = field(default=None, init=False, repr=False)
    _pid: int = field(default=-1, init=False, repr=False)
    _unusable: bool = field(default=False, init=False, repr=False)
    _warned_damaged: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_bytes < 1:
            raise ConfigError("the cache's max_bytes must be positive")
        self.directory = Path(self.directory)

    # -- connection ------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(self.directory) / DB_NAME

    def _db(self) -> sqlite3.Connection:
        """This process's connection (a forked child opens its own)."""
        if self._conn is None or self._pid != os.getpid():
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None,
                                   check_same_thread=False)
            try:
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only takes effect on a new file
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                # no memory map: a file cut short behind SQLite's back must be an error, not SIGBUS
                conn.execute("PRAGMA mmap_size = 0")
                with _transaction(conn):
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        conn.execute(statement)
            except sqlite3.Error:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _safely(self, work: Callable[[sqlite3.Connection], T], default: T) -> T:
        """``work(db)``; ``default`` once the cache cannot be used (the first failure warns,
        naming the file, and turns the cache off for the rest of this process's run)."""
        if self._unusable:
            return default
        try:
            return work(self._db())
        except (sqlite3.Error, OSError) as exc:
            self.close()
            self._unusable = True
            why = (f"it is locked by another process (waited {self.timeout_s:g} s)" if "locked" in str(exc)
                   else f"{exc}; remove it to start a new cache"
                   if isinstance(exc, sqlite3.DatabaseError) and self.path.is_file() else str(exc))
            warnings.warn(f"the embedding cache {self.path} cannot be used: {why}; going on without it",
                          stacklevel=4)
            return default

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __getstate__(self) -> dict[str, Any]:  # picklable for worker processes: no connection
        state = dict(self.__dict__)
        state["_conn"], state["_pid"] = None, -1
        return state

    # -- entries ---------------------------------------------------------------------------------
    def get(self, keys: Sequence[bytes]) -> dict[bytes, torch.Tensor]:
        """The stored states of those ``keys`` that are present (and marks them recently used)."""
        return {k: torch.from_numpy(v.copy()) for k, v in self.get_arrays(keys).items()}

    def get_arrays(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Like :meth:`get`, as read-only arrays over the stored bytes (no copy)."""
        return self._safely(lambda db: self._get_arrays(db, keys), {})

    def _get_arrays(self, db: sqlite3.Connection, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        damaged: list[bytes] = []
        for chunk in _chunks(list(dict.fromkeys(keys)), _CHUNK):
            marks = ",".join("?" * len(chunk))
            rows = db.execute(f"SELECT key, rows, cols, dtype, data, crc FROM states WHERE key IN ({marks})",
                              chunk).fetchall()
            for key, n, d, dtype, data, crc in rows:
                array = _stored_array(n, d, dtype, data, crc)
                if array is None:
                    damaged.append(key)
                else:
                    found[key] = array
        if damaged:
            self._drop(db, damaged)
        self._touch(db, list(found))
        return found

    def drop_damaged(self, keys: Sequence[bytes]) -> None:
        """Delete entries that could not be used (their texts are encoded and stored again),
        saying so once per process."""
        self._safely(lambda db: self._drop(db, keys), None)

    def _drop(self, db: sqlite3.Connection, keys: Sequence[bytes]) -> None:
        with _transaction(db):
            self._delete(db, list(keys))
        if not self._warned_damaged:
            self._warned_damaged = True
            warnings.warn(f"the embedding cache {self.path}: {len(keys)} stored state(s) failed their checksum or "
                          "shape check (damaged on disk?); their texts are encoded again", stacklevel=4)

    def _delete(self, db: sqlite3.Connection, keys: list[bytes]) -> int:
        """Delete these entries (inside a transaction); returns the bytes freed."""
        freed = 0
        for chunk in _chunks(keys, _CHUNK):
            marks = ",".join("?" * len(chunk))
            freed += db.execute(f"SELECT COALESCE(SUM(nbytes), 0) FROM used WHERE key IN ({marks})", chunk).fetchone()[0]
            db.execute(f"DELETE FROM states WHERE key IN ({marks})", chunk)
            db.execute(f"DELETE FROM used WHERE key IN ({marks})", chunk)
        db.execute("UPDATE meta SET value = value - ? WHERE name = 'bytes'", (freed,))
        return freed

    def put(self, items: dict[bytes, torch.Tensor]) -> None:
        """Store finite ``[T, D]`` states (entries already present are kept as they are; states
        holding NaN or infinity are not stored), then evict the least recently used entries if
        the payload went over ``max_bytes``."""
        rows = []
        for key, value in items.items():
            array = value.detach().cpu().contiguous().numpy()
            array = array.astype(array.dtype.newbyteorder("<"), copy=False)
            data = array.tobytes()
            if len(data) <= self.max_bytes and array.dtype.str in DTYPES and bool(np.isfinite(array).all()):
                rows.append((key, array.shape[0], array.shape[1], array.dtype.str, data, len(data), zlib.crc32(data)))
        if rows:
            self._safely(lambda db: self._insert_rows(db, rows), None)

    def _insert_rows(self, db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        """``INSERT OR IGNORE`` the rows, record their recency and size, then evict the least
        recently used entries if the payload went over ``max_bytes``."""
        now = time.time_ns()
        with _transaction(db):
            added = 0
            for row in rows:
                size = row[5]
                if db.execute("INSERT OR IGNORE INTO states VALUES (?, ?, ?, ?, ?, ?, ?)", row).rowcount == 1:
                    db.execute("INSERT INTO used VALUES (?, ?, ?)", (row[0], now, size))
                    added += size
            total = db.execute("UPDATE meta SET value = value + ? WHERE name = 'bytes' RETURNING value",
                               (added,)).fetchone()[0]
            if total > self.max_bytes:
                self._evict(db, total, int(self.max_bytes * 0.9))
        if total > self.max_bytes:
            _vacuum(db)

    def _touch(self, db: sqlite3.Connection, keys: list[bytes]) -> None:
        """Mark entries as used now (recency lives apart from the data: no blob is rewritten)."""
        if not keys:
            return
        now = time.time_ns()
        with _transaction(db):
            for chunk in _chunks(keys, _CHUNK):
                db.execute(f"UPDATE used SET atime = ? WHERE key IN ({','.join('?' * len(chunk))})", [now, *chunk])

    def _evict(self, db: sqlite3.Connection, total: int, target: int) -> None:
        """Delete the least recently used entries until the payload is at most ``target``."""
        victims: list[bytes] = []
        freed = 0
        for key, nbytes in db.execute("SELECT key, nbytes FROM used ORDER BY atime, key"):
            if total - freed <= target:
                break
            victims.append(key)
            freed += nbytes
        self._delete(db, victims)

    def stats(self) -> CacheStats:
        db = self._db()
        entries, total = db.execute("SELECT COUNT(*), COALESCE(SUM(nbytes), 0) FROM states").fetchone()
        return CacheStats(int(entries), int(total))


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): takes the write lock up
    front, so two writers queue instead of failing on a lock upgrade."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:  # SQLite may have rolled back already (a full disk, a damaged page)
            self.db.execute("ROLLBACK")


def _stored_array(rows: Any, cols: Any, dtype: Any, data: Any, crc: Any) -> np.ndarray | None:
    """A stored row as a read-only ``[rows, cols]`` array over its bytes; None when its fields do
    not agree (a dtype that is not one :meth:`EmbeddingCache.put` writes, a blob of another size,
    a checksum that does not match)."""
    if (dtype not in DTYPES or not isinstance(data, bytes) or not isinstance(rows, int) or not isinstance(cols, int)
            or rows < 0 or cols < 0 or len(data) != rows * cols * np.dtype(dtype).itemsize
            or zlib.crc32(data) != crc):
        return None
    return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(rows, cols)


def _vacuum(db: sqlite3.Connection) -> None:
    """Return the free pages to the file system. ``incremental_vacuum`` frees one page per step
    of its statement; ``execute`` steps once (and, the pragma declaring no result columns,
    ``fetchall`` steps no further), so it would free a single page. ``executescript`` steps
    every statement to its end."""
    db.executescript("PRAGMA incremental_vacuum;")


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def parse_size(text: str) -> int:
    """``"500M"``, ``"4G"``, ``"1048576"`` -> bytes (K/M/G/T are powers of 1024)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    try:
        value = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise ConfigError(f"cannot read the size {text!r} (e.g. 500M, 4G)") from None
    if not math.isfinite(value):
        raise ConfigError(f"a cache size must be a finite number of bytes (e.g. 500M, 4G), not {text!r}")
    if value < 1:
        raise ConfigError("a cache size must be positive")
    return int(value)


@dataclass(frozen=True)
class CacheSpec:
    """A persistent cache of hidden states by name: its directory and size bound
    (:meth:`build` makes the :class:`EmbeddingCache`).

    Parameters
    ----------
    cache : str
        The cache's directory (not empty).
    cache_size : int
        Bound on its size in bytes; least recently used states go first.
    cache_timeout : float
        Seconds a writer waits for another process's hold on the cache.

    Examples
    --------
    >>> import tempfile
    >>> spec = CacheSpec(tempfile.mkdtemp(), cache_size=2**20)
    >>> type(spec.build()).__name__
    'EmbeddingCache'
    >>> CacheSpec("")
    Traceback (most recent call last):
    alignscore.settings.SettingError: cache: a directory, not an empty name
    """

    cache: str = setting("", file=True, metavar="DIR", envvar=ENV_VAR, help=(
        "Directory of a persistent cache of hidden states: texts encoded before by the same model skip the "
        "encoder."))
    cache_size: int = setting(DEFAULT_MAX_BYTES, ge=1, parse=parse_size, metavar="SIZE", requires={"cache": GIVEN},
                              help=(
        "Bound on the cache's size (e.g. 500M, 4G; default 4G); least recently used states go first."))
    cache_timeout: float = setting(5.0, gt=0, metavar="SECONDS", requires={"cache": GIVEN}, help=(
        "How long a writer waits for another process's hold on the cache before going on without it."))

    def __post_init__(self) -> None:
        check_settings(self)
        if not self.cache:
            raise SettingError("cache", "a directory, not an empty name")

    def build(self) -> EmbeddingCache:
        return EmbeddingCache(self.cache, self.cache_size, self.cache_timeout)


def forward_cached(cache: EmbeddingCache, encoder: Any, fingerprint: str, ids: torch.Tensor,
                   valid: torch.Tensor, layers: Sequence[int]) -> torch.Tensor:
    """``encoder.forward`` of a right-padded batch through the cache: ``[L, B, T, D]``.

    Texts whose every layer is stored are read from the cache; the others are encoded together
    (cut to their own longest length) and stored. Padding positions hold 0 for cached texts
    (they are masked out downstream either way).
    """
    lengths = valid.sum(1).tolist()
    keys = state_keys(fingerprint, layers, ids, lengths)
    found = _fitting(cache, cache.get_arrays([k for row in keys for k in row]),
                     {k: n for row, n in zip(keys, lengths) for k in row})
    miss = [b for b, row in enumerate(keys) if not all(k in found for k in row)]
    computed = None
    if miss:
        rows = torch.tensor(miss)
        width = max(lengths[b] for b in miss)
        computed = encoder.forward(ids[rows, :width], valid[rows, :width].long(), layers)
        cache.put({keys[b][j]: computed[j, i, :lengths[b]]
                   for i, b in enumerate(miss) for j in range(len(layers))})
        if len(miss) == len(lengths):
            return computed
    # the hits, copied once from the stored bytes into a padded buffer
    missing = set(miss)
    sample = next(iter(found.values()))
    buffer = np.zeros((len(layers), len(lengths), ids.shape[1], sample.shape[-1]), dtype=sample.dtype)
    for b, row in enumerate(keys):
        if b not in missing:
            for j, key in enumerate(row):
                buffer[j, b, :lengths[b]] = found[key]
    states = torch.from_numpy(buffer).to(encoder.device)  # hits go where computed states would
    if computed is not None:
        states[:, torch.tensor(miss, device=states.device), :computed.shape[2]] = computed.to(states.device)
    return states


def _fitting(cache: EmbeddingCache, found: dict[bytes, np.ndarray], lengths: dict[bytes, int]) -> dict[bytes, np.ndarray]:
    """The stored states whose shape fits their text (its length in tokens, the width and dtype
    most of them share); the others count as damaged (misses)."""
    if not found:
        return found
    common = Counter((a.shape[1], a.dtype.str) for a in found.values()).most_common(1)[0][0]
    fit = {k: a for k, a in found.items() if (a.shape[1], a.dtype.str) == common and a.shape[0] == lengths[k]}
    if len(fit) < len(found):
        cache.drop_damaged([k for k in found if k not in fit])
    return fit
