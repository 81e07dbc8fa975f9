"""The persistent embedding cache: hits give identical scores, another model or layer never
hits, the size bound holds, and processes can share it."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import shutil
import sqlite3
import subprocess
import sys

import pytest
import torch

import alignscore
from alignscore.cache import DB_NAME, EmbeddingCache, parse_size, state_key, state_keys
from alignscore.encoders.fingerprint import directory_fingerprint


def _pairs(wmt_data, n=60):
    return wmt_data["de-en"]["mt-system"][:n], wmt_data["de-en"]["reference"][:n]


class _Counting:
    """Wraps an encoder's forward to count the texts it encodes."""

    def __init__(self, encoder):
        self.texts = 0
        self._forward = encoder.forward
        encoder.forward = self

    def __call__(self, ids, mask, layers):
        self.texts += ids.shape[0]
        return self._forward(ids, mask, layers)


def test_hit_gives_identical_scores_without_encoding(wmt_data, tiny_bert_dir, tmp_path):
    cands, refs = _pairs(wmt_data)
    plain = alignscore.bertscore(tiny_bert_dir, layer=3).score(cands, refs)
    first = alignscore.bertscore(tiny_bert_dir, layer=3, cache=tmp_path / "c")
    counter = _Counting(first.encoder)
    cold = first.score(cands, refs)
    assert counter.texts == len(set(t.strip() for t in cands + refs))

    second = alignscore.bertscore(tiny_bert_dir, layer=3, cache=EmbeddingCache(tmp_path / "c"))
    counter = _Counting(second.encoder)
    warm = second.score(cands, refs)
    assert counter.texts == 0  # every text came from the cache
    assert second.encoder._model is None  # the model was not even loaded
    for name in ("precision", "recall", "f1"):
        # bit for bit: every text missed, so the cold run made the plain run's batches (same shapes,
        # same kernels); the warm run read back copies of those states
        assert torch.equal(cold[name], plain[name])
        assert torch.equal(warm[name], cold[name])


def test_partial_hits_and_other_compositions_share_states(wmt_data, tiny_bert_dir, tmp_path):
    cands, refs = _pairs(wmt_data)
    alignscore.bertscore(tiny_bert_dir, layer=3, cache=tmp_path).score(cands[:30], refs[:30])
    scorer = alignscore.bertscore(tiny_bert_dir, layer=3, idf=True, cache=tmp_path)
    counter = _Counting(scorer.encoder)
    got = scorer.score(cands, refs)
    assert 0 < counter.texts <= len(set(cands[30:] + refs[30:]))
    want = alignscore.bertscore(tiny_bert_dir, layer=3, idf=True).score(cands, refs)
    assert (got.f1 - want.f1).abs().max() < 1e-6  # mixed batches: summation order only


def test_other_layers_miss(wmt_data, tiny_bert_dir, tmp_path):
    cands, refs = _pairs(wmt_data, 20)
    alignscore.bertscore(tiny_bert_dir, layer=3, cache=tmp_path).score(cands, refs)
    scorer = alignscore.bertscore(tiny_bert_dir, layer=2, cache=tmp_path)
    counter = _Counting(scorer.encoder)
    got = scorer.score(cands, refs)
    assert counter.texts == len(set(t.strip() for t in cands + refs))
    assert torch.equal(got.f1, alignscore.bertscore(tiny_bert_dir, layer=2).score(cands, refs).f1)


def test_another_model_in_the_same_directory_misses(wmt_data, tiny_bert_dir, tmp_path):
    """Weights replaced in place (same path, same config, same size): never the old states."""
    from transformers import BertConfig, BertModel

    cands, refs = _pairs(wmt_data, 20)
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model_dir)
    before = alignscore.bertscore(str(model_dir), layer=3, cache=tmp_path / "c").score(cands, refs)

    torch.manual_seed(1)
    BertModel(BertConfig.from_pretrained(model_dir)).eval().save_pretrained(model_dir)
    scorer = alignscore.bertscore(str(model_dir), layer=3, cache=tmp_path / "c")
    counter = _Counting(scorer.encoder)
    after = scorer.score(cands, refs)
    assert counter.texts > 0
    assert not torch.allclose(after.f1, before.f1)
    assert torch.equal(after.f1, alignscore.bertscore(str(model_dir), layer=3).score(cands, refs).f1)


def test_dtype_and_long_text_mode_are_part_of_the_key(tiny_bert_dir):
    prints = {alignscore.HFEncoder(tiny_bert_dir, dtype=d).fingerprint() for d in ("float32", "bfloat16", "int8")}
    prints.add(alignscore.HFEncoder(tiny_bert_dir, long_texts="window").fingerprint())
    assert len(prints) == 4


def test_fingerprint_follows_file_contents_and_memo(tiny_bert_dir, tmp_path):
    model_dir = tmp_path / "m"
    shutil.copytree(tiny_bert_dir, model_dir)
    memo: dict[str, str] = {}
    first = directory_fingerprint(model_dir, memo)
    assert len(memo) >= 3 and directory_fingerprint(model_dir, memo) == first
    (model_dir / "README.md").write_text("notes do not change the model")
    assert directory_fingerprint(model_dir, memo) == first
    config = model_dir / "config.json"
    config.write_text(config.read_text() + " ")
    assert directory_fingerprint(model_dir, memo) != first


def test_size_bound_and_lru_eviction(tmp_path):
    entry = torch.zeros(10, 25)  # 1,000 bytes
    cache = EmbeddingCache(tmp_path, max_bytes=5_000)
    keys = [state_key("m", 1, [i]) for i in range(12)]
    for i, k in enumerate(keys[:4]):
        cache.put({k: entry + i})
    cache.get([keys[0]])  # 0 is now the most recently used
    cache.put({keys[4]: entry + 4, keys[5]: entry + 5})  # 6,000 > 5,000: evict down to 4,500
    stats = cache.stats()
    assert stats.bytes <= 5_000 and stats.entries == 4
    left = cache.get(keys[:6])
    assert set(left) == {keys[0], keys[3], keys[4], keys[5]}  # 1 and 2 were least recently used
    assert torch.equal(left[keys[5]], entry + 5)
    for i, k in enumerate(keys):
        cache.put({k: entry + i})
        assert cache.stats().bytes <= 5_000
    assert cache.stats().entries > 0


def test_a_scorer_stays_within_the_bound(wmt_data, tiny_bert_dir, tmp_path):
    cands, refs = _pairs(wmt_data)
    cache = EmbeddingCache(tmp_path, max_bytes=200_000)
    got = alignscore.bertscore(tiny_bert_dir, layer=3, cache=cache).score(cands, refs)
    assert 0 < cache.stats().bytes <= 200_000
    assert torch.equal(got.f1, alignscore.bertscore(tiny_bert_dir, layer=3).score(cands, refs).f1)


def _writer(path: str, seed: int, rounds: int) -> None:
    cache = EmbeddingCache(path, max_bytes=20_000, timeout_s=60)
    for r in range(rounds):
        # both processes write overlapping keys; values depend on the key only
        items = {state_key("m", 0, [(seed * 7 + r + i) % 40]): torch.full((5, 50), float((seed * 7 + r + i) % 40))
                 for i in range(8)}
        cache.put(items)
        for key, value in cache.get(list(items)).items():
            assert torch.equal(value, items[key])


@pytest.mark.slow  # two real processes: CI's tier
def test_two_processes_writing_concurrently(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), seed, 60)) for seed in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = EmbeddingCache(tmp_path, max_bytes=20_000)
    db = sqlite3.connect(cache.path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    total = db.execute("SELECT value FROM meta WHERE name = 'bytes'").fetchone()[0]
    assert total == cache.stats().bytes <= 20_000
    for key_id in range(40):
        key = state_key("m", 0, [key_id])
        for value in cache.get([key]).values():
            assert torch.equal(value, torch.full((5, 50), float(key_id)))


def test_keys_of_a_padded_batch_are_each_rows_key():
    """sha256(fingerprint | layer | the row's real ids as little-endian int64): the format existing
    caches were written with."""
    def expected(layer, row):
        return hashlib.sha256(f"m|{layer}|".encode() + b"".join(i.to_bytes(8, "little") for i in row)).digest()

    ids = torch.tensor([[101, 7, 8, 102], [101, 9, 102, 0], [101, 102, 0, 0]])
    keys = state_keys("m", [2, 5], ids, [4, 3, 2])
    assert keys == [[expected(k, ids[b, :n].tolist()) for k in (2, 5)] for b, n in enumerate((4, 3, 2))]
    assert state_key("m", 5, [101, 9, 102]) == keys[1][1]
    assert keys[1][0] != state_key("m", 2, ids[1].tolist())  # padding is not part of the key
    assert len({k for row in keys for k in row}) == 6


def test_parse_size():
    assert parse_size("500M") == 500 << 20 and parse_size("4G") == 4 << 30 and parse_size("1000") == 1000
    assert parse_size("2GiB") == 2 << 30
    with pytest.raises(alignscore.ConfigError):
        parse_size("lots")


def test_cli_cache_option(wmt_data, tiny_bert_dir, tmp_path):
    from click.testing import CliRunner

    from alignscore.cli import main

    (tmp_path / "c.txt").write_text("\n".join(wmt_data["de-en"]["mt-system"][:10]) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(wmt_data["de-en"]["reference"][:10]) + "\n")
    args = ["score", "-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), "--model", tiny_bert_dir,
            "--layer", "3", "-q", "--cache", str(tmp_path / "cache"), "--cache-size", "10M"]
    outs = []
    for _ in range(2):
        result = CliRunner().invoke(main, args + ["-o", str(tmp_path / f"out{len(outs)}.tsv")])
        assert result.exit_code == 0, result.output
        outs.append((tmp_path / f"out{len(outs)}.tsv").read_text())
    assert outs[0] == outs[1]
    texts = wmt_data["de-en"]["mt-system"][:10] + wmt_data["de-en"]["reference"][:10]
    assert EmbeddingCache(tmp_path / "cache").stats().entries == len({t.strip() for t in texts})


def test_parse_size_rejects_what_is_not_a_finite_size():
    for text in ("nan", "inf", "-inf", "infG", "1e400", "0", "-5M", "0.5", ""):
        with pytest.raises(alignscore.ConfigError):
            parse_size(text)


@pytest.mark.parametrize("size", ["nan", "inf", "NaNG"])
def test_cli_cache_size_that_is_not_finite(tmp_path, tiny_bert_dir, size):
    from cli_checks import assert_one_error, invoke

    (tmp_path / "t.txt").write_text("a b\n")
    code, _, err = invoke("score", "-c", tmp_path / "t.txt", "-r", tmp_path / "t.txt", "--model", tiny_bert_dir,
                          "--layer", "1", "--cache", tmp_path / "c", "--cache-size", size)
    assert_one_error(code, err, "cache size")


def test_the_file_shrinks_after_eviction(tmp_path):
    cache = EmbeddingCache(tmp_path, max_bytes=400_000)
    for i in range(30):
        cache.put({state_key("m", 1, [i]): torch.full((100, 25), float(i))})  # 10,000 bytes each
    cache.put({state_key("m", 1, [99]): torch.zeros(3500, 25)})  # 350,000 bytes: the small ones go
    assert cache.stats().bytes <= 400_000
    cache.close()  # checkpoints the write-ahead log into the file
    db = sqlite3.connect(cache.path)
    assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert cache.path.stat().st_size < 1.25 * 400_000  # 650,000 bytes were stored at the peak
    db.close()


def _cli_scores(tmp_path, tiny_bert_dir, *extra):
    from cli_checks import invoke

    for name, lines in (("c.txt", ["the cat sat", "hello world"]), ("r.txt", ["a cat sat", "hello there"])):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return invoke("score", "-c", tmp_path / "c.txt", "-r", tmp_path / "r.txt", "--model", tiny_bert_dir, "--layer",
                  "2", "-q", "--format", "jsonl", *extra)


def test_a_damaged_cache_file_warns_and_scores_without_it(tmp_path, tiny_bert_dir):
    code, want, err = _cli_scores(tmp_path, tiny_bert_dir)
    assert code == 0, err
    damaged = tmp_path / "cache" / DB_NAME
    damaged.parent.mkdir()
    damaged.write_bytes(b"this is not a database at all" * 100)
    code, got, err = _cli_scores(tmp_path, tiny_bert_dir, "--cache", tmp_path / "cache")
    assert code == 0, err
    assert got == want
    warnings = [ln for ln in err.splitlines() if ln.startswith("alignscore: warning:")]
    assert len(warnings) == 1 and str(damaged) in warnings[0] and "without it" in warnings[0], err
    assert damaged.read_bytes() == b"this is not a database at all" * 100  # left for the user to look at


@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_a_cache_locked_by_another_process_waits_a_few_seconds(tmp_path, tiny_bert_dir):
    import subprocess
    import sys
    import time

    EmbeddingCache(tmp_path / "cache").put({state_key("m", 0, [1]): torch.zeros(2, 2)})
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "db.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read()",
         str(tmp_path / "cache" / DB_NAME)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        code, got, err = _cli_scores(tmp_path, tiny_bert_dir, "--cache", tmp_path / "cache")
        elapsed = time.monotonic() - start
    finally:
        holder.communicate("")
    assert code == 0, err
    warnings = [ln for ln in err.splitlines() if ln.startswith("alignscore: warning:")]
    assert len(warnings) == 1 and "locked by another process (waited 5 s)" in warnings[0], err
    assert elapsed < 30  # the stated 5 s (once), not 120 s per attempt
    assert got == _cli_scores(tmp_path, tiny_bert_dir)[1]


def test_api_cache_that_cannot_be_used(tmp_path, tiny_bert_dir):
    (tmp_path / "file").write_text("a file where the cache folder should be")
    want = alignscore.bertscore(tiny_bert_dir, layer=2).score(["a b c"], ["a b d"])
    with pytest.warns(UserWarning, match="cannot be used"):
        scorer = alignscore.bertscore(tiny_bert_dir, layer=2, cache=tmp_path / "file" / "cache")
        got = scorer.score(["a b c"], ["a b d"])
    assert torch.equal(got.f1, want.f1)
