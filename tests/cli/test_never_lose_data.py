"""Never lose a user's data: every command checks its inputs and its output before writing, never
writes over an input, and a failed run leaves a good earlier output as it was."""

from __future__ import annotations

import os

import pytest

import alignscore
from cli_checks import assert_one_error, fingerprint, invoke

GOOD = ["the cat sat on the mat", "a dog ran in the park", "hello world", "people like foreign cars"]
BAD = ["a cat sat on a mat", "the dog runs", "hello there", "consumers prefer imported cars"]


@pytest.fixture()
def texts(tmp_path):
    paths = {}
    for name, lines in (("c", BAD), ("r", GOOD), ("r2", GOOD[::-1])):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


@pytest.fixture()
def no_scoring(monkeypatch):
    """Fails the test if anything is scored (the checks must come first)."""
    def refuse(self, *args, **kwargs):
        raise AssertionError("scored before the output was checked")

    monkeypatch.setattr(alignscore.Scorer, "score", refuse)
    monkeypatch.setattr("alignscore.engine.encode", refuse)


@pytest.fixture()
def score(texts, tiny_bert_dir):
    """``alignscore score`` of the candidates against the first reference file, plus options."""
    def run(*extra):
        return invoke("score", "-c", texts["c"], "-r", texts["r"], "--model", tiny_bert_dir, "--layer", 2, "-q",
                      *extra)
    return run


# -- item 1: -o equal to an input, checked inputs before the output is touched -------------------
@pytest.mark.parametrize("stream", [[], ["--stream"], ["--stream", "--format", "jsonl"], ["--resume"]])
@pytest.mark.parametrize("which", ["c", "r", "link"])
def test_output_that_is_an_input_is_refused(score, texts, tmp_path, stream, which):
    target = texts[which] if which != "link" else tmp_path / "link.tsv"
    if which == "link":
        os.symlink(texts["r"], target)  # the same file under another name
    before = fingerprint(*texts.values(), target)
    code, _, err = score("-o", target, *stream)
    assert_one_error(code, err, "is also an input", "write elsewhere")
    assert fingerprint(*texts.values(), target) == before


def test_short_reference_file_keeps_the_earlier_stream_output(score, texts, tmp_path):
    out = tmp_path / "out.tsv"
    code, _, err = score("-o", out, "--stream")
    assert code == 0, err
    before = fingerprint(out)
    texts["r"].write_text("only one line\n", encoding="utf-8")
    code, _, err = score("-o", out, "--stream")
    assert_one_error(code, err, "r.txt has 1 lines", "c.txt has 4")
    assert fingerprint(out) == before


def test_invalid_utf8_late_in_a_file_keeps_the_earlier_stream_output(score, texts, tmp_path):
    out = tmp_path / "out.jsonl"
    code, _, err = score("-o", out, "--stream", "--format", "jsonl", "--chunk-size", 1)
    assert code == 0, err
    before = fingerprint(out, str(out) + ".signature")
    texts["r"].write_bytes(b"ok\nfine\nstill fine\nbad \xff byte\n")
    code, _, err = score("-o", out, "--stream", "--format", "jsonl", "--chunk-size", 1)
    assert_one_error(code, err, "r.txt:4:", "not valid UTF-8")
    assert fingerprint(out, str(out) + ".signature") == before


def test_failed_write_keeps_the_earlier_output(score, tmp_path, monkeypatch):
    out = tmp_path / "out.tsv"
    code, _, err = score("-o", out)
    assert code == 0, err
    before = fingerprint(tmp_path)

    def disk_full(scores, fh, *args):
        fh.write("# half a header")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("alignscore.scorefiles.write_scores", disk_full)
    code, _, err = score("-o", out)
    assert_one_error(code, err, "No space left on device")
    assert fingerprint(tmp_path) == before  # the output as it was, and no temporary file left behind


def test_other_commands_refuse_an_input_as_output(texts, tmp_path, tiny_bert_dir):
    before = fingerprint(*texts.values())
    code, _, err = invoke("baseline", "--model", tiny_bert_dir, "--corpus", texts["r"], "-o", texts["r"], "-q")
    assert_one_error(code, err, "is also an input")
    code, _, err = invoke("show", "--refs-file", texts["r"], "--cands-file", texts["c"], "--line", 1,
                          "--model", tiny_bert_dir, "--layer", 2, "-o", texts["c"], "--format", "text")
    assert_one_error(code, err, "is also an input")
    diff_tsv = tmp_path / "diff.tsv"
    diff_tsv.write_text("\n".join(GOOD) + "\n", encoding="utf-8")
    before[str(diff_tsv)] = fingerprint(diff_tsv)[str(diff_tsv)]
    code, _, err = invoke("diff", "-c", texts["c"], "-r", diff_tsv, "--model", tiny_bert_dir, "--a", "--layer 1",
                          "--b", "--layer 2", "-q", "-o", tmp_path)
    assert_one_error(code, err, "is also an input")
    assert fingerprint(*texts.values(), diff_tsv) == before


# -- item 4: an output that cannot be written fails before any scoring ---------------------------
@pytest.mark.parametrize("where", ["/proc/alignscore-x.tsv", "{file}/out.tsv", "{file}/sub/out.tsv"])
@pytest.mark.parametrize("stream", [[], ["--stream"]])
def test_unwritable_output_fails_before_scoring(score, texts, tmp_path, no_scoring, where, stream):
    target = where.format(file=texts["c"])
    before = fingerprint(*texts.values())
    code, _, err = score("-o", target, *stream)
    assert_one_error(code, err, "cannot write the output here")
    assert fingerprint(*texts.values()) == before


def test_diff_and_baseline_check_the_output_before_scoring(texts, tmp_path, no_scoring, monkeypatch,
                                                           tiny_bert_dir):
    code, _, err = invoke("diff", "-c", texts["c"], "-r", texts["r"], "--model", tiny_bert_dir, "--a",
                          "--layer 1", "--b", "--layer 2", "-q", "-o", texts["c"] / "sub")
    assert_one_error(code, err, "cannot write the output here", "is a file, not a folder")

    def refuse(*args, **kwargs):
        raise AssertionError("computed before the output was checked")

    monkeypatch.setattr("alignscore.baseline.compute_baseline", refuse)
    code, _, err = invoke("baseline", "--model", tiny_bert_dir, "--corpus", texts["r"], "-o",
                          "/proc/alignscore-baseline.csv", "-q")
    assert_one_error(code, err, "cannot write the output here")


# -- item 5: empty input files -------------------------------------------------------------------
@pytest.mark.parametrize("stream", [[], ["--stream"]])
def test_empty_candidate_file(score, texts, tmp_path, stream):
    texts["c"].write_bytes(b"")
    texts["r"].write_bytes(b"")
    out = tmp_path / "out.tsv"
    code, _, err = score("-o", out, *stream)
    assert_one_error(code, err, "c.txt: is empty")
    assert not out.exists()


def test_empty_reference_file(score, texts):
    texts["r"].write_bytes(b"")
    code, _, err = score()
    assert_one_error(code, err, "r.txt has 0 lines", "c.txt has 4")


def test_empty_file_for_diff(texts, tiny_bert_dir):
    texts["c"].write_bytes(b"")
    texts["r"].write_bytes(b"")
    code, _, err = invoke("diff", "-c", texts["c"], "-r", texts["r"], "--model", tiny_bert_dir, "--a",
                          "--layer 1", "--b", "--layer 2", "-q")
    assert_one_error(code, err, "c.txt: is empty")


# -- atomic outputs: written whole, or not at all -------------------------------------------------
def test_outputs_are_renamed_into_place(score, texts, tmp_path, monkeypatch):
    """The output appears only complete: while it is written, the earlier file is intact."""
    out = tmp_path / "out.jsonl"
    out.write_text("earlier\n")
    seen = []
    original = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(src), out.read_text()))
        return original(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    code, _, err = score("-o", out, "--format", "jsonl")
    assert code == 0, err
    assert seen == [(str(tmp_path), "earlier\n")]
    assert len(out.read_text().splitlines()) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "out.jsonl", "r.txt", "r2.txt"]


def test_an_output_behind_a_symbolic_link_is_written_through(score, tmp_path):
    target = tmp_path / "kept" / "scores.tsv"
    target.parent.mkdir()
    target.write_text("earlier\n")
    link = tmp_path / "out.tsv"
    os.symlink(target, link)
    code, _, err = score("-o", link)
    assert code == 0, err
    assert link.is_symlink() and target.read_text().startswith("# model:")
