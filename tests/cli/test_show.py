"""`alignscore show` on the command line, and the best reference per
candidate (the `best_ref` column of `score`, `Scores.best_reference`, `Explanation.best_reference`)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import alignscore
from alignscore.cli import main
from alignscore.explain import explain

PAPER_REF = "people like foreign cars"
PAPER_CAND = "consumers prefer imported cars"
MODEL = ["--model", "all-MiniLM-L6-v2", "--layer", "4"]


def run(*args: str):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, stderr: str, *needles: str) -> None:
    assert code == 1, stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("alignscore: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def lines_file(tmp_path, name: str, lines: list[str]) -> str:
    path = tmp_path / name
    path.write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    return str(path)


def stderr_scores(stderr: str) -> dict[str, float]:
    line = next(ln for ln in stderr.splitlines() if ln.startswith("scores:"))
    return {k: float(v) for k, v in re.findall(r"(\w+)=([-0-9.]+)", line)}


# -- show --------------------------------------------------------------------------------------------
@pytest.mark.slow  # the real model: out of the edit loop's tier, in CI's
def test_show_text_reports_the_score_command_s_numbers(tmp_path, minilm_dir):
    code, out, err = run("show", "-r", PAPER_REF, "-c", PAPER_CAND, *MODEL)
    assert code == 0, err
    for token in ("people", "like", "foreign", "consumers", "prefer", "imported", "cars"):
        assert token in out
    assert out.startswith("signature: model:all-MiniLM-L6-v2|layers:L4|")
    assert "similarity matrix" in out and "best match (similarity)" in out
    shown = stderr_scores(err)
    refs, cands = lines_file(tmp_path, "r.txt", [PAPER_REF]), lines_file(tmp_path, "c.txt", [PAPER_CAND])
    code, out2, err2 = run("score", "-r", refs, "-c", cands, *MODEL, "-q", "--format", "jsonl")
    assert code == 0, err2
    scored = json.loads(out2)
    assert set(shown) == set(scored) == {"precision", "recall", "f1"}
    for k in scored:
        assert shown[k] == pytest.approx(scored[k], abs=2e-6)


@pytest.mark.slow  # figures from the real model: out of the edit loop's tier, in CI's
def test_show_writes_png_svg_html(tmp_path, minilm_dir):
    (tmp_path / "out").mkdir()  # an output's folder must exist (alignscore.textio.require_folder)
    for suffix, magic in (("png", b"\x89PNG"), ("svg", b"<?xml"), ("html", b"<!DOCTYPE html>")):
        path = tmp_path / "out" / f"pair.{suffix}"
        code, out, err = run("show", "-r", PAPER_REF, "-c", PAPER_CAND, *MODEL, "-o", str(path))
        assert code == 0, err
        data = path.read_bytes()
        assert data.startswith(magic) and len(data) > 2_000
        if suffix != "png":
            assert all(t.encode() in data for t in ("people", "consumers", "imported"))
        assert out == "" and f"wrote {path}" in err


@pytest.mark.slow  # figures from the real model: out of the edit loop's tier, in CI's
def test_show_optimal_transport_figure(tmp_path, minilm_dir):
    path = tmp_path / "wmd.svg"
    code, out, err = run("show", "-r", PAPER_REF, "-c", PAPER_CAND, *MODEL, "--aligner", "wmd", "-o", str(path))
    assert code == 0, err
    svg = path.read_text(encoding="utf-8")
    assert "transport flow" in svg and "score" in svg and "people" in svg
    code, out, err = run("show", "-r", PAPER_REF, "-c", PAPER_CAND, *MODEL, "--aligner", "sinkhorn", "--n-gram", "2")
    assert code == 0, err
    assert "foreign cars" in out and "imported cars" in out  # the 2-gram units are listed


def test_show_names_the_best_of_several_references(tmp_path, minilm_dir):
    refs = [PAPER_REF, "consumers prefer imported cars a lot", "the weather is cold"]
    args = [a for r in refs for a in ("-r", r)]
    code, out, err = run("show", *args, "-c", PAPER_CAND, *MODEL)
    assert code == 0, err
    assert "reference [1] (best): consumers prefer imported cars a lot" in out
    assert "best reference: [1] consumers prefer imported cars a lot" in err
    # the same pair through `score` with three reference files: the best_ref column agrees
    files = [lines_file(tmp_path, f"r{k}.txt", [r]) for k, r in enumerate(refs)]
    cands = lines_file(tmp_path, "c.txt", [PAPER_CAND])
    code, out, err = run("score", *[a for f in files for a in ("-r", f)], "-c", cands, *MODEL, "-q",
                         "--format", "jsonl")
    assert code == 0, err
    assert json.loads(out)["best_ref"] == 1


def test_show_takes_a_line_of_files(tmp_path, minilm_dir):
    refs = lines_file(tmp_path, "refs.txt", ["the cat sat", PAPER_REF])
    cands = lines_file(tmp_path, "cands.txt", ["a cat sat", PAPER_CAND])
    code, out, err = run("show", "--refs-file", refs, "--cands-file", cands, "--line", "2", *MODEL)
    assert code == 0, err
    assert f"candidate: {PAPER_CAND}" in out and f"reference [0]: {PAPER_REF}" in out
    code, out, err = run("show", "--refs-file", refs, "--cands-file", cands, "--line", "3", *MODEL)
    one_line_error(code, err, "cands.txt", "no line 3: the file has 2 line(s)")


@pytest.mark.parametrize("args, needle", [
    (["-r", "a b"], "no candidate"),
    (["-c", "a b"], "no reference"),
    (["-r", "a", "-c", "b", "--line", "1"], "--line picks a line"),
    (["-r", "a", "--cands-file", "x.txt"], "need --line"),
    (["-r", "a", "-c", "b", "--format", "png"], "needs a file"),
    (["-r", "a", "-c", "b", "-o", "out.jpeg"], "suffix"),
])
def test_show_bad_input_is_one_line(args, needle, tiny_bert_dir):
    code, out, err = run("show", *args, "--model", tiny_bert_dir, "--layer", "1")
    one_line_error(code, err, needle)


def test_best_reference_api_field(minilm_dir):
    scorer = alignscore.bertscore("all-MiniLM-L6-v2", layer=4)
    groups = [["the weather is cold", PAPER_REF], [PAPER_REF, "the weather is cold"]]
    scores = scorer.score([PAPER_CAND, PAPER_CAND], groups)
    assert scores.best_reference.tolist() == [1, 0]
    expls = explain(scorer, [PAPER_CAND, PAPER_CAND], groups)
    assert [e.best_reference for e in expls] == [1, 0]
    assert all(e.best.reference == PAPER_REF for e in expls)
