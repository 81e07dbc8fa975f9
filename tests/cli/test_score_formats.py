"""The command line: output formats, and one clear line (no traceback) for every bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from alignscore.cli import main
from alignscore import HFEncoder, SingleLayer
from cli_checks import CODE_ROOT
from helpers import compose


def run(*args: str):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _assert_one_line_error(code: int, stderr: str, *needles: str) -> None:
    assert code != 0
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("alignscore: error:")]
    assert len(errors) == 1, stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def test_tsv_and_jsonl(files, tiny_bert_dir):
    refs = files("refs.txt", ["the cat sat on the mat", "hello world"])
    cands = files("cands.txt", ["a cat sat on a mat", "hello there"])
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "2", "-q")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# model:") and lines[1].startswith("# mean precision=")
    assert lines[2].split("\t") == ["precision", "recall", "f1"] and len(lines) == 5
    assert "signature: model:" in err and "2 candidates:" in err
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "2", "-q",
                         "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [sorted(r) for r in rows] == [["f1", "precision", "recall"]] * 2
    tsv_f1 = float(lines[3].split("\t")[2])
    assert rows[0]["f1"] == pytest.approx(tsv_f1, abs=0)


def test_two_reference_files_write_best_ref(files, tiny_bert_dir):
    cands = files("c.txt", ["the cat sat", "a dog ran"])
    r1 = files("r1.txt", ["the cat sat", "birds fly south"])
    r2 = files("r2.txt", ["completely different", "a dog ran"])
    code, out, err = run("score", "-r", r1, "-r", r2, "-c", cands, "--model", tiny_bert_dir, "--layer", "2",
                         "-q", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["best_ref"] for r in rows] == [0, 1]
    assert rows[0]["f1"] == pytest.approx(1.0, abs=1e-5)


def test_count_mismatch_names_both_files(files, tiny_bert_dir):
    refs = files("refs.txt", ["a", "b", "c"])
    cands = files("cands.txt", ["a", "b"])
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "1")
    _assert_one_line_error(code, err, "refs.txt has 3 lines", "cands.txt has 2")


def test_empty_and_whitespace_lines_score_zero(files, tiny_bert_dir):
    refs = files("refs.txt", ["", "a real sentence", "   \t", "same text"])
    cands = files("cands.txt", ["something", "", "also blank?", "same text"])
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "2", "-q",
                         "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 4
    for row in rows[:3]:
        assert row == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert rows[3]["f1"] == pytest.approx(1.0, abs=1e-5)
    assert all(math.isfinite(v) for row in rows for v in row.values())
    assert "3 pair(s) have an empty text" in err


def test_not_utf8_names_file_and_line(files, tiny_bert_dir):
    refs = files("refs.txt", ["ok", "fine", "good"])
    cands = files("cands.txt", b"ok\nfine\nbad \xff byte\n")
    code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "1")
    _assert_one_line_error(code, err, "cands.txt:3:", "not valid UTF-8")


def test_layer_out_of_range(files, tiny_bert_dir):
    refs = files("refs.txt", ["a b"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "9")
    _assert_one_line_error(code, err, "layer 9 does not exist", "0..4")


def test_model_that_cannot_be_loaded(files, tmp_path):
    refs = files("refs.txt", ["a b"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", str(tmp_path / "no-such-model"),
                         "--layer", "1")
    _assert_one_line_error(code, err, "--model: no such model folder", "no-such-model")


def test_unknown_model_without_layer(files, tiny_bert_dir):
    refs = files("refs.txt", ["a b"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir)
    _assert_one_line_error(code, err, "no default layer", "--layer")


def test_idf_l_needs_a_corpus(files, tiny_bert_dir):
    refs = files("refs.txt", ["a b"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "1",
                         "--weighting", "idf-L")
    _assert_one_line_error(code, err, "idf-L needs a corpus", "--idf-corpus")
    empty = files("empty.txt", ["", "  "])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "1",
                         "--weighting", "idf-L", "--idf-corpus", empty)
    _assert_one_line_error(code, err, "empty.txt is empty")


def test_idf_l_uses_the_corpus(files, tiny_bert_dir):
    refs = files("refs.txt", ["the cat sat on the mat", "the dog ran"])
    cands = files("cands.txt", ["the cat sat", "a dog ran fast"])
    corpus = files("corpus.txt", ["the cat", "the dog", "the end", "a mat"])
    outs = []
    for extra in ([], ["--weighting", "idf-L", "--idf-corpus", corpus], ["--weighting", "idf-S"]):
        code, out, err = run("score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "2", "-q",
                             "--format", "jsonl", *extra)
        assert code == 0, err
        outs.append([json.loads(line)["f1"] for line in out.splitlines()])
    assert len({tuple(o) for o in outs}) == 3  # none, idf-L and idf-S all differ
    from alignscore import IdfL
    want = compose(HFEncoder(tiny_bert_dir), SingleLayer(2), weighting=IdfL(idf_corpus=["the cat", "the dog", "the end", "a mat"]))
    assert outs[1] == pytest.approx(want.score(["the cat sat", "a dog ran fast"],
                                               ["the cat sat on the mat", "the dog ran"]).f1.tolist(), abs=1e-6)


def test_rescale_needs_a_baseline(files, tiny_bert_dir):
    refs = files("refs.txt", ["a b"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "1", "--rescale")
    _assert_one_line_error(code, err, "--rescale: applies with --baseline FILE only")


def test_sep_needs_idf(files, tiny_bert_dir):
    refs = files("refs.txt", ["a b"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "1", "--sep")
    _assert_one_line_error(code, err, "--sep: applies to weighting idf-L or idf-S, not to weighting none")


def test_long_text_is_truncated_with_a_warning(files, tiny_bert_dir):
    long_text = " ".join(["word"] * 200)  # the tiny model's limit is 64 tokens
    refs = files("refs.txt", [long_text, "short"])
    code, out, err = run("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "1", "-q",
                         "--format", "jsonl")
    assert code == 0, err
    assert "alignscore: warning: 1 text(s) longer than 64 tokens were truncated" in err
    assert json.loads(out.splitlines()[0])["f1"] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_closed_stdout_ends_quietly(files, tiny_bert_dir):
    """``alignscore score ... | head -2``: the reader is gone before the rows are written."""
    import subprocess

    from cli_checks import spawn

    lines = [f"the cat sat on mat number {i}" for i in range(300)]
    refs = files("refs.txt", lines)
    proc = spawn("score", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--layer", "1", "-q",
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # as head does after two lines
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 1, err  # click's status for a closed pipe
    assert err == "", err  # no traceback, no internal error, no "Exception ignored"


@pytest.mark.parametrize("spec", ["'unbalanced", '--layer "2', "--layer 2 \\"])
def test_unsplittable_diff_spec_names_the_option(files, tiny_bert_dir, spec):
    refs = files("refs.txt", ["a b", "c d"])
    code, out, err = run("diff", "-r", refs, "-c", refs, "--model", tiny_bert_dir, "--a", "--layer 1", "--b", spec)
    _assert_one_line_error(code, err, "--b", "cannot split it into options")
    assert "internal error" not in err


@pytest.mark.parametrize("args, needle", [
    (["score", "-c", "x"], "Missing option '-r'"),
    (["score", "--format", "xml", "-c", "x", "-r", "y"], "Invalid value for '--format'"),
    (["no-such-command"], "No such command"),
])
def test_usage_errors_are_one_line(args, needle):
    code, out, err = run(*args)
    assert code == 2
    _assert_one_line_error(code, err, needle, "--help")
    assert len(err.strip().splitlines()) == 1


def test_a_bad_run_option_is_the_compilers_one_line():
    """A run option's value is checked once, by its declaration in the compiler, naming the flag as typed."""
    code, out, err = run("score", "--batch-size", "0", "-c", "x", "-r", "y")
    assert code == 1 and out == ""
    assert err.strip() == "alignscore: error: --batch-size: expected an integer >= 1, not 0"


@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_a_default_run_writes_only_what_was_asked_for(files, tiny_bert_dir, tmp_path, warm):
    """The default path (no cache) writes nothing in the user's folders (no export folder, no
    memo of digests), from its start (a fresh interpreter); with ``--cache DIR`` only DIR is added
    (the hub's own cache aside), by what the run does (a fork of tests/warm_server.py)."""
    python, variables = warm
    home, exports = tmp_path / "home", tmp_path / "exports"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "ALIGNSCORE_EXPORT_DIR": str(exports), "PYTHONPATH": str(CODE_ROOT)}  # where earlier versions wrote
    env.pop("ALIGNSCORE_CACHE", None)
    env.pop("ALIGNSCORE_DEBUG", None)
    refs = files("refs.txt", ["the cat sat on the mat", "hello world"])
    cands = files("cands.txt", ["a cat sat on a mat", "hello there"])
    written = lambda: sorted(str(p.relative_to(home)) for p in home.rglob("*")  # noqa: E731
                             if not p.relative_to(home).parts[:2] == (".cache", "huggingface"))
    for command, extra, made in (([sys.executable, "-m", "alignscore"], [], []),
                                 (python, ["--cache", str(tmp_path / "cache")], ["cache"])):
        before = {p.name for p in tmp_path.iterdir()}
        proc = subprocess.run([*command, "score", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "2",
                               "-q", "-o", str(tmp_path / "out.tsv"), *extra],
                              capture_output=True, text=True, env={**env, **variables}, timeout=600)
        assert proc.returncode == 0, proc.stderr
        assert not exports.exists() and written() in ([], [".cache"]), written()
        assert sorted({p.name for p in tmp_path.iterdir()} - before - {"out.tsv"}) == made


@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_alignscore_debug_shows_the_traceback(tmp_path, warm):
    """The one documented way to see more than the one error line."""
    python, variables = warm  # alignscore's __main__ in forks of tests/warm_server.py
    env = {**os.environ, **variables, "PYTHONPATH": str(CODE_ROOT), "ALIGNSCORE_DEBUG": "1"}
    args = [*python, "score", "-c", str(tmp_path / "none.txt"), "-r", str(tmp_path / "r")]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    assert "Traceback (most recent call last)" in proc.stderr and "InputError" in proc.stderr
    del env["ALIGNSCORE_DEBUG"]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert proc.stderr.startswith("alignscore: error: ") and "Traceback" not in proc.stderr
