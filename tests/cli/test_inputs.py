"""bert-score's command-line habits: --lang, -m, -l, --idf, several files after one -r, texts
given inline, ragged references from a TSV, ``python -m alignscore``; each bad input one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import alignscore
from alignscore import HFEncoder, Scorer, SingleLayer
from alignscore import run_spec
from alignscore.encoders import layers

from cli_checks import CODE_ROOT, assert_one_error, assert_same_tsv, fingerprint, invoke
from helpers import REPO, compose, needs, wmt16

CANDS = ["the cat sat on the mat", "a dog ran in the park", "hello there"]
REFS = ["a cat sat on a mat", "the dog was running in a park", "hello world"]
REFS2 = ["cats sit on mats", "a dog ran", "good morning"]


@pytest.fixture
def tiny(tiny_bert_dir):
    return ["--model", tiny_bert_dir, "--layer", "2", "-q"]


def ok(*args: object) -> tuple[str, str]:
    code, out, err = invoke(*args)
    assert code == 0, err
    return out, err


# -- --lang, -m, -l, --idf ------------------------------------------------------------------
def test_lang_picks_bertscores_model():
    assert run_spec({"lang": "en"}).encoder.model == "roberta-large"
    assert run_spec({"lang": "zh"}).encoder.model == "bert-base-chinese"
    assert run_spec({"lang": "en-sci"}).encoder.model == "allenai/scibert_scivocab_uncased"
    assert run_spec({"lang": "de"}).encoder.model == "bert-base-multilingual-cased"  # any other language


@pytest.mark.reference
def test_lang_table_is_bert_scores():
    utils = needs("bert_score.utils")
    assert layers.LANG_MODELS == dict(utils.lang2model)
    assert layers.LANG_FALLBACK == utils.lang2model["some-other-language"]


def test_lang_on_the_command_line(files, tiny_bert_dir, monkeypatch):
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    monkeypatch.setitem(layers.LANG_MODELS, "en", tiny_bert_dir)  # the real roberta-large is not here
    out, err = ok("score", "-c", c, "-r", r, "--lang", "en", "-l", "2", "-q")
    by_model, _ = ok("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "-l", "2", "-q")
    assert out == by_model and out.startswith(f"# model:{HFEncoder(tiny_bert_dir).signature()}|layers:L2|")
    # --lang names a model: another --model beside it is refused (the same one is only said twice)
    assert_one_error(*invoke("score", "-c", c, "-r", r, "--lang", "en", "-m", "all-MiniLM-L6-v2")[::2],
                     f"--lang means model {tiny_bert_dir}; it cannot go with --model all-MiniLM-L6-v2")
    same, _ = ok("score", "-c", c, "-r", r, "--lang", "en", "-m", tiny_bert_dir, "-l", "2", "-q")
    assert same == by_model
    assert_one_error(*invoke("score", "-c", c, "-r", r, "--lang", "English")[::2], "not a language code")


def test_short_options_and_idf(files, tiny_bert_dir):
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    long, _ = ok("score", "-c", c, "-r", r, "--model", tiny_bert_dir, "--layer", "3", "--weighting", "idf-S", "-q")
    short, _ = ok("score", "-c", c, "-r", r, "-m", tiny_bert_dir, "-l", "3", "--idf", "-q")
    assert short == long and "|layers:L3|" in short and "|w:idf-S|" in short
    both, _ = ok("score", "-c", c, "-r", r, "-m", tiny_bert_dir, "-l", "3", "--idf", "--weighting", "idf-S", "-q")
    assert both == long
    assert_one_error(*invoke("score", "-c", c, "-r", r, "-m", tiny_bert_dir, "--idf", "--weighting", "none")[::2],
                     "--idf means weighting idf-S", "--weighting none")


@pytest.mark.parametrize("flag, needle", [
    ("--num_layers", "no such option --num_layers: bert_score's num_layers is --layer here"),
    ("--rescale_with_baseline", "no such option --rescale_with_baseline: bert_score's rescale_with_baseline is "
                                "--baseline here"),
    ("--model_type", "bert_score's model_type is --model here"),
    ("--nthreads", "bert_score's nthreads has no counterpart here"),
])
def test_bert_scores_flags_name_the_option_to_use(files, flag, needle):
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    line = assert_one_error(*invoke("score", "-c", c, "-r", r, flag, "3")[::2], needle)
    assert "Did you mean" not in line


# -- several files after one -r ---------------------------------------------------------------
def test_several_files_after_one_r(files, tiny):
    c, r1, r2 = files("c.txt", CANDS), files("r1.txt", REFS), files("r2.txt", REFS2)
    repeated, _ = ok("score", "-r", r1, "-r", r2, "-c", c, *tiny, "--format", "jsonl")
    one_r, _ = ok("score", "-r", r1, r2, "-c", c, *tiny, "--format", "jsonl")
    long_form, _ = ok("score", "--refs", r1, r2, "-c", c, *tiny, "--format", "jsonl")
    assert one_r == repeated == long_form and all("best_ref" in json.loads(row) for row in one_r.splitlines())
    # nothing after the files is swallowed: the next option ends the list, its value stays its own
    out, _ = ok("score", "-c", c, "-r", r1, r2, "--layer", "3", "--model", tiny[1], "-q")
    assert "|layers:L3|" in out and out.splitlines()[2].endswith("best_ref")
    out, _ = ok("score", "-r", r1, "-q", "-c", c, "--model", tiny[1], "--layer", "2")
    assert "best_ref" not in out
    code, _, err = invoke("score", "-r", r1, "--layer", "3", r2, "-c", c, "--model", tiny[1])
    assert_one_error(code, err, "unexpected extra argument", "r2.txt")
    code, _, err = invoke("score", "-r", r1, "--", r2, "-c", c, "--model", tiny[1])  # -- ends the options
    assert_one_error(code, err, "unexpected extra argument")
    # a missing file among them is named
    code, _, err = invoke("score", "-r", r1, str(Path(r1).with_name("nope.txt")), "-c", c, *tiny)
    assert_one_error(code, err, "nope.txt", "cannot read file")


def test_diff_takes_several_files_after_one_r(files, tiny_bert_dir):
    c, r1, r2 = files("c.txt", CANDS), files("r1.txt", REFS), files("r2.txt", REFS2)
    args = ["-c", c, "--model", tiny_bert_dir, "--layer", "1", "--a", "--aligner greedy", "--b", "--layer 2", "-q"]
    repeated, _ = ok("diff", "-r", r1, "-r", r2, *args)
    assert ok("diff", "-r", r1, r2, *args)[0] == repeated != ok("diff", "-r", r1, *args)[0]


# -- texts given inline ------------------------------------------------------------------------
def test_inline_texts_score_as_files(files, tiny):
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    from_files, err_files = ok("score", "-c", c, "-r", r, *tiny)
    inline = [a for cand, ref in zip(CANDS, REFS) for a in ("--cand-text", cand, "--ref-text", ref)]
    from_args, err_args = ok("score", *inline, *tiny)
    assert from_args == from_files and err_args == err_files
    one, _ = ok("score", "--cand-text", CANDS[0], "--ref-text", REFS[0], *tiny, "--format", "jsonl")
    assert json.loads(one)["f1"] == pytest.approx(float(from_files.splitlines()[3].split("\t")[2]), abs=1e-6)


@pytest.mark.parametrize("args, needles", [
    (["--cand-text", "a", "--cand-text", "b", "--ref-text", "c"], ["2 --cand-text but 1 --ref-text"]),
    (["--cand-text", "a"], ["1 --cand-text but 0 --ref-text"]),
    (["--cand-text", "a", "--ref-text", "b", "-c", "{c}", "-r", "{r}"], ["one way", "-c/-r files",
                                                                          "--cand-text/--ref-text"]),
    (["--ref-text", "b", "--tsv", "{tsv}"], ["one way", "--tsv"]),
    (["--cand-text", "a", "--ref-text", "b", "--stream", "-o", "{out}"], ["--stream reads -c/-r files"]),
    (["--tsv", "{tsv}", "--resume", "-o", "{out}"], ["--stream reads -c/-r files"]),
    (["-c", "{c}"], ["Missing option '-r' / '--refs'", "score --help"]),
    (["-r", "{r}"], ["Missing option '-c' / '--cands'"]),
    ([], ["nothing to score"]),
])
def test_bad_input_combinations(files, tmp_path, tiny, args, needles):
    paths = {"c": files("c.txt", CANDS), "r": files("r.txt", REFS), "tsv": files("p.tsv", ["a\tb"]),
             "out": str(tmp_path / "out.tsv")}
    before = fingerprint(*paths.values())
    code, out, err = invoke("score", *[a.format(**paths) for a in args], *tiny)
    assert_one_error(code, err, *needles)
    assert out == "" and fingerprint(*paths.values()) == before


# -- ragged references from a TSV --------------------------------------------------------------
def test_tsv_with_any_number_of_references(files, tiny, tiny_bert_dir, tmp_path):
    data = wmt16("de-en")
    cands, refs = data["mt-system"][:6], data["reference"][:6]
    groups = [refs[i:i + 1 + i % 3] for i in range(6)]  # 1, 2, 3, 1, 2, 3 references
    groups[0] = [refs[5]]
    cands[4] = ""  # an empty candidate is an empty text
    tsv = files("pairs.tsv", ["\t".join([c, *g]) for c, g in zip(cands, groups)])
    with pytest.warns(UserWarning, match="2 pair\\(s\\) have an empty text"):
        want = compose(HFEncoder(tiny_bert_dir), SingleLayer(2)).score(cands, groups)
    out, err = ok("score", "--tsv", tsv, *tiny, "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["best_ref"] for r in rows] == want.best_reference.tolist()
    assert [r["f1"] for r in rows] == pytest.approx(want.f1.tolist(), abs=1e-6) and rows[4]["f1"] == 0
    assert "have an empty text" in err
    # to a file: the same rows; the TSV itself is never overwritten
    ok("score", "--tsv", tsv, *tiny, "-o", str(tmp_path / "out.tsv"))
    table = (tmp_path / "out.tsv").read_text().splitlines()
    assert table[2] == "precision\trecall\tf1\tbest_ref" and len(table) == 3 + 6
    before = fingerprint(tsv)
    assert_one_error(*invoke("score", "--tsv", tsv, *tiny, "-o", tsv)[::2], "is also an input")
    assert fingerprint(tsv) == before


@pytest.mark.parametrize("lines, needles", [
    (["a\tb", "no tab here", "c\td"], ["bad.tsv:2:", "has no tab"]),
    (["a\tb", ""], ["bad.tsv:2:", "has no tab"]),
    (["a\tb\t\tc"], ["bad.tsv:1:", "reference 2 is empty"]),
    (["a\tb\t"], ["bad.tsv:1:", "reference 2 is empty"]),
    ([], ["bad.tsv:", "is empty"]),
])
def test_bad_tsv_lines(files, tiny, lines, needles):
    code, out, err = invoke("score", "--tsv", files("bad.tsv", lines), *tiny)
    assert_one_error(code, err, *needles)
    assert out == ""


# -- python -m alignscore, py.typed ------------------------------------------------------------
@pytest.mark.slow  # subprocesses: out of the edit loop's tier, in CI's
def test_python_m_runs_the_cli(files, tiny, warm):
    c, r = files("c.txt", CANDS), files("r.txt", REFS)
    # the test's environment (kernel dispatch, threads, export folder) with this checkout first
    env = {**os.environ, "PYTHONPATH": str(CODE_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("ALIGNSCORE_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "alignscore", "score", "-c", c, "-r", r, *tiny],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert_same_tsv(proc.stdout, invoke("score", "-c", c, "-r", r, *tiny)[1])
    # alignscore's __main__ again, in forks of a process that imported it (tests/warm_server.py)
    python, variables = warm
    proc = subprocess.run([*python, "score", "--tsv"], capture_output=True, text=True, env={**env, **variables},
                          timeout=600)
    assert_one_error(proc.returncode, proc.stderr, "--tsv", "requires an argument")
    assert "Usage: alignscore" in subprocess.run(python, capture_output=True, text=True, env={**env, **variables},
                                                 timeout=600).stderr


def test_type_hints_are_shipped():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    assert (Path(alignscore.__file__).parent / "py.typed").is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["alignscore"]
