"""`alignscore show` and `alignscore diff` on the command line, and the best reference per
candidate (the `best_ref` column of `score`, `Scores.best_reference`, `Explanation.best_reference`)."""

from __future__ import annotations

import json
import re

import pytest
import torch
from click.testing import CliRunner

import alignscore
from alignscore.cli import main
from alignscore.cli.options import parse_spec, sides_specs
from alignscore.evaluation.agreement import average_ranks, rank_pairs, spearman
from alignscore.errors import ConfigError
from alignscore.explain import explain
from helpers import compose

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


# -- diff --------------------------------------------------------------------------------------------
def test_average_ranks_and_spearman_match_scipy():
    from scipy import stats
    torch.manual_seed(0)
    x = torch.randint(0, 6, (40,)).double()  # many ties
    y = x + torch.randn(40)
    assert torch.allclose(average_ranks(x), torch.from_numpy(stats.rankdata(-x.numpy())).double())
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x.numpy(), y.numpy())[0], abs=1e-12)
    ra, rb, order = rank_pairs(x, y)
    gaps = (ra - rb).abs()[order]
    assert bool((gaps[:-1] >= gaps[1:]).all())


def test_parse_spec():
    # the values as typed: the compiler reads and checks them (sides_specs), naming the side
    assert parse_spec("--aligner wmd --n-gram 2", "--b") == {"aligner": "wmd", "n_gram": "2"}
    assert parse_spec("moverscore-v2", "--a") == {"preset": "moverscore-v2"}
    assert parse_spec("--layer 3 --weighting idf-S", "--a") == {"layer": "3", "weighting": "idf-S"}
    with pytest.raises(ConfigError, match="--a 'nonsense': not a preset"):
        parse_spec("nonsense", "--a")
    with pytest.raises(ConfigError, match="--b"):
        parse_spec("--no-such-option 1", "--b")
    with pytest.raises(ConfigError, match=r"^--b '--aligner magic': --aligner: no aligner 'magic'"):
        sides_specs({}, [("--b", "--aligner magic")], progress=False)


@pytest.fixture(scope="module")
def wmt_files(tmp_path_factory, wmt_data):
    folder = tmp_path_factory.mktemp("diff")
    data = wmt_data["de-en"]
    refs, cands = data["reference"][:24], data["mt-system"][:24]
    (folder / "refs.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (folder / "cands.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    return str(folder / "refs.txt"), str(folder / "cands.txt"), refs, cands


@pytest.mark.slow
def test_diff_ranks_the_pairs_where_greedy_and_wmd_disagree(wmt_files, minilm_dir):
    refs_path, cands_path, refs, cands = wmt_files
    code, out, err = run("diff", "-r", refs_path, "-c", cands_path, *MODEL, "--a", "--aligner greedy",
                         "--b", "--aligner wmd --special-tokens drop", "--top", "3", "-q")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# A: model:all-MiniLM-L6-v2|layers:L4|") and "align:greedy(cos)" in lines[0]
    assert "align:wmd(" in lines[1] and "special=drop" in lines[1]
    # the ranking, recomputed from the API: the same three lines, in the same order
    enc = alignscore.HFEncoder("all-MiniLM-L6-v2")
    f1 = compose(encoder=enc, aggregator=alignscore.SingleLayer(4)).score(cands, refs).f1
    wmd = compose(encoder=enc, aggregator=alignscore.SingleLayer(4), special_tokens="drop",
                            aligner=alignscore.ALIGNERS.build("wmd")).score(cands, refs)["score"]
    ra, rb = average_ranks(f1), average_ranks(wmd)
    expected = torch.argsort((ra - rb).abs(), descending=True, stable=True)[:3]
    rho = spearman(f1, wmd)
    assert f"Spearman rho(A f1, B score) = {rho:.4f}" in lines[2]
    header = lines[3].split()
    assert header[:6] == ["line", "A.f1", "A.rank", "B.score", "B.rank", "shift"]
    rows = [ln.split() for ln in lines[4:7]]
    assert [int(r[0]) for r in rows] == [int(i) + 1 for i in expected]
    for r, i in zip(rows, expected.tolist()):
        assert float(r[1]) == pytest.approx(float(f1[i]), abs=1e-4)
        assert float(r[3]) == pytest.approx(float(wmd[i]), abs=1e-4)
        assert float(r[5]) == pytest.approx(float(rb[i] - ra[i]))
    # each listed pair comes with both alignments
    assert out.count("=== #") == 3 and out.count("--- A ---") == 3 and out.count("--- B ---") == 3
    assert "best match (similarity)" in out and "sends mass to (flow)" in out


@pytest.mark.slow
def test_diff_writes_a_folder(wmt_files, minilm_dir, tmp_path):
    refs_path, cands_path, refs, cands = wmt_files
    folder = tmp_path / "cmp"
    code, out, err = run("diff", "-r", refs_path, "-c", cands_path, *MODEL, "--a", "--layer 4",
                         "--b", "--layer 2 --weighting idf-S", "--top", "2", "--format", "svg",
                         "-o", str(folder), "-q")
    assert code == 0, err
    table = (folder / "diff.tsv").read_text(encoding="utf-8").splitlines()
    assert table[0].startswith("# A: ") and "layers:L2" in table[1] and "w:idf-S" in table[1]
    rows = [ln.split("\t") for ln in table[4:]]
    assert len(rows) == len(cands) and sorted(int(r[0]) for r in rows) == list(range(1, len(cands) + 1))
    shifts = [abs(float(r[5])) for r in rows]
    assert shifts == sorted(shifts, reverse=True)
    figures = sorted(p.name for p in folder.glob("*.svg"))
    top2 = [int(r[0]) for r in rows[:2]]
    assert figures == sorted(f"line{n}-{s}.svg" for n in top2 for s in "ab")


def test_diff_bad_spec_is_one_line(tmp_path, tiny_bert_dir):
    refs = lines_file(tmp_path, "r.txt", ["a b c"])
    cands = lines_file(tmp_path, "c.txt", ["a b d"])
    code, out, err = run("diff", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "1",
                         "--a", "--aligner greedy", "--b", "--no-such-option")
    one_line_error(code, err, "--b", "--no-such-option")
    code, out, err = run("diff", "-r", refs, "-c", cands, "--model", tiny_bert_dir, "--layer", "1",
                         "--a", "--aligner greedy", "--b", "--aligner wmd", "--format", "png")
    one_line_error(code, err, "-o DIR")
