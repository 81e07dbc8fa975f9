"""A damaged cache never changes a score: rows with flipped bytes, rows of the wrong size or dtype
written behind the cache's back, and a file cut short while a run reads it are each a miss (one
warning), and the run encodes those texts again."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from alignscore.cache import DB_NAME
from cli_checks import assert_same_tsv, CODE_ROOT, invoke

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world"]


@pytest.fixture
def scored(files, tiny_bert_dir, tmp_path):
    """``run(*extra) -> (stdout, warnings)`` of a TSV score run over a cache in ``tmp_path/cache``;
    the first call (no cache) is the reference output."""
    c, r = files("c.txt", CANDS), files("r.txt", REFS)

    def run(*extra):
        code, out, err = invoke("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "2", "-q", *extra)
        assert code == 0, err
        return out, [ln for ln in err.splitlines() if ln.startswith("alignscore: warning:")]

    return run


def _rows(db_path):
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT key, rows, cols, dtype, data FROM states").fetchall()


def _damage(db_path, statement, values):
    with sqlite3.connect(db_path) as db:
        db.execute(statement, values)


@pytest.mark.parametrize("how", ["flipped byte", "blob too short", "wrong dtype", "rows wrong", "junk"])
def test_a_damaged_row_is_a_miss_with_one_warning(scored, tmp_path, how):
    want, _ = scored()
    cache = tmp_path / "cache"
    assert scored("--cache", cache) == (want, [])
    key, rows, cols, dtype, data = _rows(cache / DB_NAME)[0]
    if how == "flipped byte":
        _damage(cache / DB_NAME, "UPDATE states SET data = ? WHERE key = ?",
                (data[:5] + bytes([data[5] ^ 0x10]) + data[6:], key))
    elif how == "blob too short":
        _damage(cache / DB_NAME, "UPDATE states SET data = ? WHERE key = ?", (data[:-4], key))
    elif how == "wrong dtype":
        _damage(cache / DB_NAME, "UPDATE states SET dtype = '<i4' WHERE key = ?", (key,))
    elif how == "rows wrong":
        _damage(cache / DB_NAME, "UPDATE states SET rows = ?, cols = ? WHERE key = ?", (rows * cols, 1, key))
    else:
        _damage(cache / DB_NAME, "UPDATE states SET data = 'junk', rows = 'x', crc = 'y' WHERE key = ?", (key,))
    out, warned = scored("--cache", cache)
    assert_same_tsv(out, want)  # the damaged text encoded again, alone: the same to float rounding
    assert len(warned) == 1 and "failed their checksum or shape check" in warned[0] and DB_NAME in warned[0]
    again, warned = scored("--cache", cache)  # the text was stored again: read back as written
    assert again == out and warned == []


@pytest.mark.slow  # a second process reading while one cuts: CI's tier
def test_a_file_cut_short_under_a_reading_run_is_an_error_not_a_crash(tiny_bert_dir, tmp_path):
    """SQLite's own reads (no memory map): the process survives a file cut short under an open
    connection, and scores as without the cache (a memory-mapped read past the new end of file
    would end it with SIGBUS). At most one warning says the cache could not be used."""
    script = textwrap.dedent(f"""
        import os, warnings, alignscore
        from alignscore import Composition, Runtime, Scorer, SingleLayer
        from alignscore.cache import EmbeddingCache
        cands, refs = {CANDS!r} * 40, {REFS!r} * 40
        want = alignscore.bertscore({tiny_bert_dir!r}, layer=2).score(cands, refs).f1
        writer = EmbeddingCache({str(tmp_path / 'cache')!r})
        Scorer(alignscore.HFEncoder({tiny_bert_dir!r}), Composition(SingleLayer(2)), Runtime(), writer).score(cands, refs)
        writer.close()  # the last connection: the write-ahead log goes into the database file
        reader = EmbeddingCache({str(tmp_path / 'cache')!r})
        assert reader.stats().entries > 0  # the connection is open when the file is cut
        os.truncate(reader.path, 8192)  # two pages: the states are past the new end
        scorer = Scorer(alignscore.HFEncoder({tiny_bert_dir!r}), Composition(SingleLayer(2)), Runtime(), reader)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = scorer.score(cands, refs).f1
        about = [str(w.message) for w in caught if "cache" in str(w.message)]
        assert len(about) <= 1 and all("cannot be used" in a or "checksum" in a for a in about), about
        assert (got - want).abs().max() < 1e-6
        print("ok")
        """)
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])
