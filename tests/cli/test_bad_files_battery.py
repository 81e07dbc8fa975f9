"""A bad-input battery, in the style of a fuzzer, over the command line and the Python API for
files, encodings, output paths, caches, resume and options.

Every case ends in one clear error (CLI: one ``alignscore: error: ...`` line, non-zero exit,
file and line where there is one, no traceback, no internal error; API: an
:class:`~alignscore.AlignScoreError`) or in correct output, and no input file and no earlier
output changes (the whole working folder is fingerprinted before and after). Hypothesis draws the
contents, line counts, paths and values, derandomized so that every run tries the same cases.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sqlite3
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import alignscore
from alignscore.cache import DB_NAME, EmbeddingCache, parse_size
from alignscore.stream import score_stream
from alignscore.textio import iter_lines
from alignscore.textio import read_lines
from cli_checks import assert_one_error, fingerprint, invoke

CHEAP = settings(max_examples=25, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SCORING = settings(CHEAP, max_examples=4)  # cases that load the model and score

CANDS = ["the cat sat on the mat", "a dog ran", "hello world"]
REFS = ["a cat sat on a mat", "the dog runs", "hello there"]
#: one line of text as a file holds it (no line break inside; no lone surrogates: not encodable)
LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=12)


@contextmanager
def folder():
    """A fresh working folder per hypothesis example."""
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def write(path: Path, lines: list[str] | bytes) -> Path:
    path.write_bytes(lines if isinstance(lines, bytes) else "".join(t + "\n" for t in lines).encode("utf-8"))
    return path


def pair(where: Path, cands: list[str] | bytes = CANDS, refs: list[str] | bytes = REFS) -> tuple[Path, Path]:
    return write(where / "c.txt", cands), write(where / "r.txt", refs)


def score(model: str, cands: Path, refs: Path, *extra: object) -> tuple[int, str, str]:
    return invoke("score", "-c", cands, "-r", refs, "--model", model, "--layer", 2, "-q", *extra)


def refused(where: Path, run, *needles: str) -> str:
    """``run()`` fails with one clear line containing the needles and changes nothing in ``where``."""
    before = fingerprint(where)
    code, _, err = run()
    line = assert_one_error(code, err, *needles)
    assert fingerprint(where) == before
    return line


STREAMS = st.sampled_from([[], ["--stream"], ["--stream", "--format", "jsonl"], ["--resume"]])


# -- files ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["-c", "-r"])
@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_missing_file_or_folder(tiny_bert_dir, tmp_path, which, kind):
    cands, refs = pair(tmp_path)
    bad = tmp_path / "nothing-here.txt"
    if kind == "folder":
        bad.mkdir()
    args = {"-c": cands, "-r": refs, which: bad}
    needle = "No such file or directory" if kind == "missing" else "is a directory"
    line = refused(tmp_path, lambda: score(tiny_bert_dir, args["-c"], args["-r"]), needle)
    assert str(bad) in line or "nothing-here.txt" in line
    with pytest.raises(alignscore.InputError, match="nothing-here.txt"):
        read_lines(bad)


@CHEAP
@given(cands=st.lists(LINE, max_size=5), refs=st.lists(LINE, max_size=5), stream=STREAMS)
def test_empty_files_and_unequal_line_counts(tiny_bert_dir, cands, refs, stream):
    assume(len(cands) != len(refs) or not cands)
    with folder() as where:
        c, r = pair(where, cands, refs)
        needle = "c.txt: is empty" if not cands else f"r.txt has {len(refs)} lines but {c} has {len(cands)}"
        refused(where, lambda: score(tiny_bert_dir, c, r, "-o", where / "out.tsv", *stream), needle)
        with pytest.raises(alignscore.InputError, match="is empty" if not cands else "lines"):
            score_stream(alignscore.bertscore(tiny_bert_dir, layer=2), c, [r], where / "api.tsv")
        assert not (where / "api.tsv").exists()


@SCORING
@given(lines=st.lists(LINE, min_size=1, max_size=4), crlf=st.booleans(), bom=st.booleans())
def test_crlf_and_bom_give_the_scores_of_plain_lines(tiny_bert_dir, lines, crlf, bom):
    assume(crlf or bom)
    with folder() as where:
        plain = write(where / "plain.txt", lines)
        odd = write(where / "odd.txt", (b"\xef\xbb\xbf" if bom else b"") + "".join(
            t + ("\r\n" if crlf else "\n") for t in lines).encode("utf-8"))
        assert read_lines(odd) == read_lines(plain) == list(iter_lines(odd))
        refs = write(where / "r.txt", REFS[:1] * len(lines))
        code, want, err = score(tiny_bert_dir, plain, refs, "--format", "jsonl")
        assert code == 0, err
        code, got, err = score(tiny_bert_dir, odd, refs, "--format", "jsonl")
        assert code == 0, err
        assert got == want and all(math.isfinite(json.loads(row)["f1"]) for row in got.splitlines())


BAD_BYTES = st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80abc"])


@CHEAP
@given(lines=st.lists(LINE, min_size=1, max_size=6), data=st.data(), bad=BAD_BYTES, stream=STREAMS,
       in_refs=st.booleans())
def test_invalid_utf8_names_file_and_line(tiny_bert_dir, lines, data, bad, stream, in_refs):
    k = data.draw(st.integers(0, len(lines) - 1))
    at = data.draw(st.integers(0, len(lines[k].encode("utf-8"))))
    raw = [t.encode("utf-8") for t in lines]
    raw[k] = raw[k][:at] + bad + raw[k][at:]
    with folder() as where:
        broken = b"".join(t + b"\n" for t in raw)
        c, r = pair(where, *((CANDS[:1] * len(lines), broken) if in_refs else (broken, REFS[:1] * len(lines))))
        name = r if in_refs else c
        refused(where, lambda: score(tiny_bert_dir, c, r, "-o", where / "out.tsv", *stream),
                f"{name}:{k + 1}:", "not valid UTF-8")
        with pytest.raises(alignscore.InputError, match=f"{name}:{k + 1}:"):
            read_lines(name)


@settings(CHEAP, max_examples=200)
@given(content=st.binary(max_size=40))
def test_any_bytes_read_the_same_lazily_and_at_once(content):
    """The two readers agree on every file: the same texts, or the same error at the same line."""
    with folder() as where:
        path = write(where / "f.txt", content)
        try:
            whole = read_lines(path)
        except alignscore.InputError as exc:
            with pytest.raises(alignscore.InputError) as lazy:
                list(iter_lines(path))
            assert lazy.value.line == exc.line and "not valid UTF-8" in str(exc)
        else:
            assert list(iter_lines(path)) == whole


# -- output paths --------------------------------------------------------------------------------
@CHEAP
@given(which=st.sampled_from(["cands", "refs", "symlink", "hardlink", "stopwords", "idf-corpus"]), stream=STREAMS)
def test_output_that_is_an_input(tiny_bert_dir, which, stream):
    with folder() as where:
        c, r = pair(where)
        words, corpus = write(where / "stop.txt", ["the"]), write(where / "corpus.txt", REFS)
        target = {"cands": c, "refs": r, "stopwords": words, "idf-corpus": corpus}.get(which, where / "out.tsv")
        if which == "symlink":
            os.symlink(c, target)
        elif which == "hardlink":
            os.link(r, target)
        opts = ["--stopwords", words, "--weighting", "idf-L", "--idf-corpus", corpus]
        refused(where, lambda: score(tiny_bert_dir, c, r, *opts, "-o", target, *stream), "is also an input")


@CHEAP
@given(where_to=st.sampled_from(["/proc/alignscore.tsv", "{file}/out.tsv", "{file}/a/b/out.tsv"]),
       command=st.sampled_from(["score", "stream", "diff", "baseline", "show"]))
def test_output_that_cannot_be_written(tiny_bert_dir, where_to, command):
    with folder() as where:
        c, r = pair(where)
        out = where_to.format(file=c)
        run = {
            "score": lambda: score(tiny_bert_dir, c, r, "-o", out),
            "stream": lambda: score(tiny_bert_dir, c, r, "-o", out, "--stream"),
            "diff": lambda: invoke("diff", "-c", c, "-r", r, "--model", tiny_bert_dir, "--a", "--layer 1", "--b",
                                   "--layer 2", "-q", "-o", out),
            "baseline": lambda: invoke("baseline", "--model", tiny_bert_dir, "--corpus", r, "-q", "-o", out),
            "show": lambda: invoke("show", "-c", "a b", "-r", "a c", "--model", tiny_bert_dir, "--layer", 1,
                                   "--format", "text", "-o", out),
        }[command]
        refused(where, run, "cannot write the output here")


FAILURES = {  # how a run over good earlier output can fail, as (files, extra options, what the error says)
    "invalid UTF-8": (dict(refs=b"fine\nbad \xff\nok\n"), [], ["not valid UTF-8"]),
    "short reference file": (dict(refs=REFS[:2]), [], ["lines"]),
    "empty candidates": (dict(cands=b"", refs=b""), [], ["empty"]),
    "no such layer": ({}, ["--layer", "99"], ["layer 99"]),
    "no such model": ({}, ["--model", "/no/such/model"], ["/no/such/model"]),
    "missing idf corpus": ({}, ["--weighting", "idf-L"], ["idf-L", "corpus"]),
}


@CHEAP
@given(failure=st.sampled_from(sorted(FAILURES)), mode=st.sampled_from([[], ["--stream"], ["--format", "jsonl"],
                                                                         ["--stream", "--format", "jsonl"]]))
def test_a_failed_run_keeps_the_earlier_output(tiny_bert_dir, failure, mode):
    with folder() as where:
        c, r = pair(where)
        out = where / "scores.out"
        code, _, err = score(tiny_bert_dir, c, r, "-o", out, *mode)
        assert code == 0, err
        files, extra, needles = FAILURES[failure]
        pair(where, **files)
        refused(where, lambda: score(tiny_bert_dir, c, r, "-o", out, *mode, *extra), *needles)


# -- caches --------------------------------------------------------------------------------------
@settings(CHEAP, max_examples=500)
@given(text=st.text(max_size=12))
def test_cache_sizes_are_a_positive_number_of_bytes_or_a_clear_error(text):
    try:
        size = parse_size(text)
    except alignscore.ConfigError:
        return
    assert isinstance(size, int) and size >= 1


@pytest.mark.parametrize("size", ["nan", "inf", "-inf", "1e999", "0", "-1M", "half"])
def test_bad_cache_size_on_the_command_line(tiny_bert_dir, tmp_path, size):
    c, r = pair(tmp_path)
    refused(tmp_path, lambda: score(tiny_bert_dir, c, r, "--cache", tmp_path / "cache", "--cache-size", size),
            "size")


@SCORING
@given(garbage=st.binary(min_size=1, max_size=3000))
def test_damaged_cache_scores_without_it(tiny_bert_dir, garbage):
    assume(not garbage.startswith(b"SQLite format 3\x00"))
    want = alignscore.bertscore(tiny_bert_dir, layer=2).score(CANDS, REFS)
    with folder() as where:
        db = where / DB_NAME
        db.write_bytes(garbage)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = alignscore.bertscore(tiny_bert_dir, layer=2, cache=where).score(CANDS, REFS)
        about_cache = [str(w.message) for w in caught if "cache" in str(w.message)]
        if about_cache:  # once, not per batch, naming the file; the file is left for the user
            assert len(about_cache) == 1 and f"{db} cannot be used" in about_cache[0]
            assert db.read_bytes() == garbage
        else:  # SQLite takes a file shorter than its header for a new, empty database
            assert len(garbage) < 100 and EmbeddingCache(where).stats().entries > 0
    assert got.f1.tolist() == want.f1.tolist()


def test_locked_cache_waits_its_stated_time_then_scores_without_it(tiny_bert_dir, tmp_path):
    EmbeddingCache(tmp_path).put({b"k": torch.zeros(1, 1)})
    holder = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        start = time.monotonic()
        with pytest.warns(UserWarning, match=r"locked by another process \(waited 0.3 s\)"):
            got = alignscore.bertscore(tiny_bert_dir, layer=2, cache=EmbeddingCache(tmp_path, timeout_s=0.3)).score(
                CANDS, REFS)
        assert time.monotonic() - start < 10
    finally:
        holder.close()
    assert got.f1.tolist() == alignscore.bertscore(tiny_bert_dir, layer=2).score(CANDS, REFS).f1.tolist()


# -- resume --------------------------------------------------------------------------------------
@settings(CHEAP, max_examples=15)
@given(content=st.one_of(st.binary(min_size=1, max_size=200),
                         st.lists(LINE, min_size=1, max_size=4).map(lambda ls: "\n".join(ls).encode("utf-8"))),
       fmt=st.sampled_from(["tsv", "jsonl"]))
def test_resume_never_touches_a_foreign_file(tiny_bert_dir, content, fmt):
    with folder() as where:
        c, r = pair(where)
        out = write(where / f"mine.{fmt}", content)
        code, _, err = score(tiny_bert_dir, c, r, "-o", out, "--resume", "--format", fmt)
        if code == 0:  # only an empty file, or the start of this run's own header, may be taken over
            signature = err.split("signature: ")[1].strip()
            header = f"# {signature}\n# mean pending\nprecision\trecall\tf1\n".encode("utf-8")
            assert content == b"" or fmt == "tsv" and header.startswith(content), (content, err)
            return
        assert_one_error(code, err, "nothing to resume")  # no signature file beside it: not a streamed output
        assert out.read_bytes() == content and not (where / f"mine.{fmt}.signature").exists()


@pytest.mark.parametrize("change, needle", [
    (["--layer", "1"], "another composition"),
    (["--format", "jsonl"], "another format"),
    (["--weighting", "idf-S"], "another composition"),
    (["-r", "{refs}"], "has the columns"),
])
@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_resume_with_another_run(tiny_bert_dir, tmp_path, change, needle, fmt):
    c, r = pair(tmp_path)
    out = tmp_path / "o.out"
    code, _, err = score(tiny_bert_dir, c, r, "-o", out, "--stream", "--format", fmt)
    assert code == 0, err
    ours = err.split("signature: ")[1].strip()
    out.write_bytes(out.read_bytes()[:-10])
    if fmt == "jsonl" and change[0] == "--format":
        change = ["--format", "tsv"]
    change = [a.format(refs=r) for a in change]
    line = refused(tmp_path, lambda: score(tiny_bert_dir, c, r, "-o", out, "--resume", "--format", fmt, *change),
                   needle)
    if needle == "another composition":  # the settings that differ, named: not two whole signatures
        assert ("layers L2 vs L1" if change[0] == "--layer" else "w none vs idf-S") in line and ours not in line


# -- options -------------------------------------------------------------------------------------
def _not_a_positive_int(value: str) -> bool:
    try:
        return int(value) < 1
    except ValueError:
        return True


@settings(CHEAP, max_examples=40)
@given(option=st.sampled_from(["--batch-size", "--chunk-size", "--token-budget"]),
       value=st.one_of(st.integers(max_value=0).map(str), st.text(max_size=6)).filter(_not_a_positive_int))
def test_bad_counts(tiny_bert_dir, option, value):
    with folder() as where:
        c, r = pair(where)
        line = refused(where, lambda: score(tiny_bert_dir, c, r, f"{option}={value}", "-o", where / "o.tsv",
                                            "--stream"))
        declared = option != "--chunk-size"  # a run option: the compiler's check; the command's own: click's
        assert (f"alignscore: error: {option}: " if declared else f"Invalid value for '{option}'") in line, line


@settings(CHEAP, max_examples=15)
@given(value=st.text(max_size=8).filter(lambda v: v not in ("tsv", "jsonl")))
def test_bad_format(tiny_bert_dir, value):
    with folder() as where:
        c, r = pair(where)
        refused(where, lambda: score(tiny_bert_dir, c, r, f"--format={value}"), "Invalid value for '--format'")


WORDS = st.text(st.sampled_from("abc -12"), max_size=8)


@settings(CHEAP, max_examples=30)
@given(before=WORDS, quote=st.sampled_from(["'", '"']), after=WORDS, flag=st.sampled_from(["--a", "--b"]))
def test_unbalanced_quotes_in_a_composition(tiny_bert_dir, before, quote, after, flag):
    spec = before + quote + after
    with pytest.raises(ValueError):
        shlex.split(spec)
    other = "--b" if flag == "--a" else "--a"
    with folder() as where:
        c, r = pair(where)
        refused(where, lambda: invoke("diff", "-c", c, "-r", r, "--model", tiny_bert_dir, flag, spec, other,
                                      "--layer 1", "-o", where / "d"), flag, "cannot split")


@pytest.mark.parametrize("kwargs, needle", [({"fmt": "xml"}, "unknown format"), ({"chunk_size": 0}, "chunk size")])
def test_api_stream_options(tiny_bert_dir, tmp_path, kwargs, needle):
    c, r = pair(tmp_path)
    before = fingerprint(tmp_path)
    with pytest.raises(alignscore.ConfigError, match=needle):
        score_stream(alignscore.bertscore(tiny_bert_dir, layer=2), c, [r], tmp_path / "o.tsv", **kwargs)
    assert fingerprint(tmp_path) == before
